package server

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/webhooks"
)

type receiver struct {
	mu     sync.Mutex
	seen   map[string]int // activity id -> deliveries
	bad    []string
	pub    *ecdsa.PublicKey
	events chan struct{}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ts, sig := r.Header.Get("X-Latchkey-Timestamp"), r.Header.Get("X-Latchkey-Signature")
	der, _ := hex.DecodeString(sig)
	d := webhooks.Digest(ts, body)
	var ev struct {
		Type string `json:"type"`
		Data struct {
			Activity struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"activity"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &ev)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !ecdsa.VerifyASN1(rc.pub, d[:], der) || ev.Type != "ACTIVITY_UPDATES" || r.Header.Get("X-Latchkey-Delivery") == "" {
		rc.bad = append(rc.bad, string(body))
	}
	rc.seen[ev.Data.Activity.ID]++
	select {
	case rc.events <- struct{}{}:
	default:
	}
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen)
}

// A burst of activities, with Latchkey restarted in the middle: the receiver gets every event
// exactly once, signed with the server's webhook key.
func TestWebhooksDeliverEveryEventOnceAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	mk := filepath.Join(dir, "mk")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	open := func() (*harness, context.CancelFunc, chan struct{}) {
		s, err := Open(context.Background(), Config{DataDir: dir, MasterKeyFile: mk, LoopbackWebhooks: true, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		h := &harness{t: t, s: s, now: time.Now().UTC()}
		s.API.Now, s.Engine.Services().Now = h.clock, h.clock
		srv := httptest.NewServer(s.API.Handler())
		h.url = srv.URL
		s.Webhooks.Poll = 20 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { s.Webhooks.Run(ctx); close(done) }()
		t.Cleanup(srv.Close)
		return h, cancel, done
	}
	a, stopA, doneA := open()
	rc := &receiver{seen: map[string]int{}, pub: a.s.Keys.Public(custody.Webhook), events: make(chan struct{}, 1)}
	recvSrv := httptest.NewServer(rc)
	defer recvSrv.Close()
	root, created := a.rootOrg("Acme")
	wantError(t, root.submit("create_webhook_endpoint", "ACTIVITY_TYPE_CREATE_WEBHOOK_ENDPOINT", map[string]any{"url": recvSrv.URL, "name": "r",
		"subscriptions": []any{map[string]any{"eventType": "BALANCE_CONFIRMED_UPDATES"}}}), http.StatusNotImplemented, 12, "not supported by Latchkey")
	mustOK(t, root.submit("create_webhook_endpoint", "ACTIVITY_TYPE_CREATE_WEBHOOK_ENDPOINT", map[string]any{"url": recvSrv.URL, "name": "r"}))
	l := root.query("list_webhook_endpoints", nil)
	if l.str("webhookEndpoints", "0", "url") != recvSrv.URL || l.str("webhookEndpoints", "0", "isActive") != "true" {
		t.Fatalf("list_webhook_endpoints: %s", l.raw)
	}
	const n = 30
	submit := func(h *harness, from, to int) {
		c := h.client(created.OrganizationID, root.priv)
		var wg sync.WaitGroup
		for i := from; i < to; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				mustOK(t, c.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": fmt.Sprintf("t%d", i), "userIds": []string{}}))
			}(i)
		}
		wg.Wait()
	}
	// The first half is submitted while the first process does not deliver, then it stops:
	// those events can only reach the receiver from the outbox, through the second process.
	stopA()
	<-doneA
	submit(a, 0, n/2)
	a.s.Close()
	b, stopB, doneB := open()
	defer func() { stopB(); <-doneB; b.s.Close() }()
	submit(b, n/2, n)
	deadline := time.After(20 * time.Second)
	for rc.count() < n {
		select {
		case <-rc.events:
		case <-deadline:
			t.Fatalf("only %d of %d events delivered", rc.count(), n)
		}
	}
	time.Sleep(200 * time.Millisecond) // room for a duplicate to show up
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for id, k := range rc.seen {
		if k != 1 {
			t.Errorf("activity %s delivered %d times", id, k)
		}
	}
	if len(rc.bad) > 0 {
		t.Fatalf("%d deliveries failed verification: %s", len(rc.bad), rc.bad[0])
	}
}
