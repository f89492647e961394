package server_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/chain/rpc"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/oidc"
	"github.com/latchkey/latchkey/internal/outbound"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// heldMailer blocks every send until released, telling when one has started.
type heldMailer struct {
	started chan string
	release chan struct{}
	sent    atomic.Int64
}

func (m *heldMailer) SendEmail(ctx context.Context, msg notify.Message) error {
	if err := outbound.Check(ctx, "test send"); err != nil {
		return err
	}
	m.started <- msg.To
	<-m.release
	m.sent.Add(1)
	return nil
}

func (m *heldMailer) SendSMS(ctx context.Context, s notify.SMS) error {
	return errors.New("no SMS here")
}

// A probe saw a 2 s SMTP send in one organization stall an unrelated organization's activity by
// 1.8 s: the send ran inside the store's one writer. Sends now happen after commit, so while one
// organization's e-mail is held at the SMTP server, another organization's activity completes.
func TestSlowSendDoesNotStallOtherOrganizations(t *testing.T) {
	mail := &heldMailer{started: make(chan string, 1), release: make(chan struct{})}
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.Emailer = mail }))
	slow, _ := h.RootOrg("Slow")
	other, _ := h.RootOrg("Other")
	done := make(chan servertest.Response, 1)
	go func() {
		done <- slow.Submit("init_otp", "ACTIVITY_TYPE_INIT_OTP_V3", map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "a@example.com", "appName": "Slow"})
	}()
	select {
	case <-mail.started: // the send is in progress, and held
	case r := <-done:
		t.Fatalf("init_otp finished without sending: %s", r.Raw)
	}
	fast := make(chan servertest.Response, 1)
	go func() {
		fast <- other.Submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "t", "userIds": []string{}})
	}()
	select {
	case r := <-fast:
		servertest.MustOK(t, r)
	case <-time.After(30 * time.Second):
		close(mail.release)
		t.Fatal("another organization's activity waited for an SMTP send")
	}
	close(mail.release)
	servertest.MustOK(t, <-done)
	if mail.sent.Load() != 1 {
		t.Fatalf("%d e-mails sent", mail.sent.Load())
	}
}

// A probe saw 40 concurrent init_otp mixed with failing activities send 41–42 e-mails: the
// writer re-ran handlers after a failed one in the same batch, and each run sent again. A code
// is now queued in its transaction and sent once after commit: exactly one e-mail per
// activity, however often the transaction ran.
func TestConcurrentInitOTPSendsOncePerActivity(t *testing.T) {
	h, out := otpHarness(t)
	root, _ := h.RootOrg("Parent")
	const n = 40
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			r := root.Submit("init_otp", "ACTIVITY_TYPE_INIT_OTP_V3", map[string]any{"otpType": "OTP_TYPE_EMAIL",
				"contact": fmt.Sprintf("user%d@example.com", i), "appName": "Acme"})
			if r.Status != http.StatusOK {
				t.Errorf("init_otp %d: %d %s", i, r.Status, r.Raw)
			}
		}(i)
		go func(i int) {
			defer wg.Done()
			// Fails inside its handler (no such user), so the batch it shares restarts.
			r := root.Submit(
				"create_user_tag",
				"ACTIVITY_TYPE_CREATE_USER_TAG",
				map[string]any{"userTagName": fmt.Sprintf("t%d", i),
					"userIds": []string{fmt.Sprintf("00000000-0000-4000-8000-%012d", i)}},
			)
			if r.Status == http.StatusOK && r.Str("activity", "status") == "ACTIVITY_STATUS_COMPLETED" {
				t.Error("a tag of an unknown user was created")
			}
			failed.Add(1)
		}(i)
	}
	wg.Wait()
	es, err := notify.ReadOutbox(out.Path())
	if err != nil {
		t.Fatal(err)
	}
	to := map[string]int{}
	for _, e := range es {
		to[e.Email.To]++
	}
	if len(es) != n || len(to) != n {
		t.Fatalf(
			"%d e-mails to %d addresses for %d activities (%d failing ones alongside)",
			len(es),
			len(to),
			n,
			failed.Load(),
		)
	}
}

// Every outbound client refuses to run in a context the engine marks as inside a write
// transaction: a handler that called one there would fail loudly, in tests and in production.
func TestOutboundClientsRefuseInsideATransaction(t *testing.T) {
	ctx := outbound.Forbid(context.Background())
	out, _ := notify.NewOutbox(filepath.Join(t.TempDir(), "o.jsonl"))
	smtp := &notify.SMTP{Addr: "127.0.0.1:1", From: "a@example.com", Mode: notify.ModePlain}
	twilio := &notify.Twilio{AccountSID: "AC1", AuthToken: "t", From: "+15551234567", BaseURL: "http://127.0.0.1:1"}
	v := oidc.NewVerifier(oidc.Config{TrustedIssuers: []string{"http://127.0.0.1:1"}, AllowLoopbackHTTP: true})
	_, verr := v.Verify(ctx, unsignedToken("http://127.0.0.1:1"), oidc.Expect{})
	for name, err := range map[string]error{
		"smtp":       smtp.SendEmail(ctx, notify.Message{To: "b@example.com", Subject: "s", Text: "t"}),
		"twilio":     twilio.SendSMS(ctx, notify.SMS{To: "+15557654321", Body: "b"}),
		"dev outbox": out.SendEmail(ctx, notify.Message{To: "b@example.com", Subject: "s", Text: "t"}),
		"chain rpc":  (&rpc.Client{Network: "eip155:1", URL: "http://127.0.0.1:1"}).Call(ctx, "eth_chainId", nil, nil),
		"oidc":       verr,
	} {
		if !errors.Is(err, outbound.ErrInTransaction) {
			t.Errorf("%s inside a transaction: %v", name, err)
		}
	}
}

// unsignedToken is a JWS an issuer could have issued (its signature is never reached: the keys
// cannot be fetched inside a transaction).
func unsignedToken(iss string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc(
		[]byte(`{"alg":"RS256","kid":"k"}`),
	) + "." + enc(
		[]byte(`{"iss":"`+iss+`","sub":"s","aud":"a","exp":9999999999}`),
	) + "." + enc(
		[]byte("sig"),
	)
}
