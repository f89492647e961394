package server_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// receiver checks deliveries as a receiver written for Turnkey does: the Ed25519 signature over
// "v1.ed25519.<key id>.<timestamp ms>.<event id>.<raw body>" with the key the JWKS names, and
// the body as the activity itself (id, organizationId, status, type, fingerprint, intent,
// result, votes at the top level).
type receiver struct {
	mu     sync.Mutex
	seen   map[string]int // activity id -> deliveries
	bad    []string
	keys   map[string]ed25519.PublicKey // kid -> key, from the JWKS
	events chan struct{}
	orgs   map[string]int // X-Turnkey-Organization-Id -> deliveries
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h := r.Header
	kid, ts, eid := h.Get("X-Turnkey-Signature-Key-Id"), h.Get("X-Turnkey-Timestamp"), h.Get("X-Turnkey-Event-Id")
	sig, _ := hex.DecodeString(h.Get("X-Turnkey-Signature"))
	signed := append([]byte("v1.ed25519."+kid+"."+ts+"."+eid+"."), body...)
	var act map[string]json.RawMessage
	_ = json.Unmarshal(body, &act)
	var id, status string
	_ = json.Unmarshal(act["id"], &id)
	_ = json.Unmarshal(act["status"], &status)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ok := rc.keys[kid] != nil && ed25519.Verify(rc.keys[kid], signed, sig) &&
		h.Get("X-Turnkey-Event-Type") == "ACTIVITY_UPDATES" &&
		h.Get("X-Turnkey-Signature-Algorithm") == "ed25519" &&
		h.Get("X-Turnkey-Signature-Version") == "v1" &&
		h.Get("X-Turnkey-Webhook-Version") == "1" &&
		eid != ""
	for _, member := range []string{"id", "organizationId", "status", "type", "fingerprint", "intent", "result", "votes"} {
		ok = ok && act[member] != nil
	}
	if !ok {
		rc.bad = append(rc.bad, string(body))
	}
	rc.seen[id]++
	if rc.orgs != nil {
		rc.orgs[h.Get("X-Turnkey-Organization-Id")+" "+status]++
	}
	select {
	case rc.events <- struct{}{}:
	default:
	}
}

// jwksKeys fetches the webhook JWKS from a Latchkey API, as a receiver does.
func jwksKeys(t *testing.T, apiURL string) map[string]ed25519.PublicKey {
	t.Helper()
	resp, err := http.Get(apiURL + "/public/v1/discovery/webhooks/jwks")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct{ Kid, Kty, Crv, X string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil || len(set.Keys) != 1 ||
		set.Keys[0].Crv != "Ed25519" {
		t.Fatalf("JWKS: %+v %v", set, err)
	}
	x, _ := base64.RawURLEncoding.DecodeString(set.Keys[0].X)
	return map[string]ed25519.PublicKey{set.Keys[0].Kid: ed25519.PublicKey(x)}
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen)
}

// A burst of activities, with Latchkey restarted in the middle: the receiver gets every event
// exactly once, signed with the server's webhook key.
func TestWebhooksDeliverEveryEventOnceAcrossARestart(t *testing.T) {
	cfg := servertest.NewConfig(t)
	cfg.LoopbackWebhooks = true
	open := func() (*servertest.Harness, context.CancelFunc, chan struct{}) {
		h := servertest.Start(t, cfg)
		h.Freeze()
		h.Server.Webhooks.Poll = 20 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { h.Server.Webhooks.Run(ctx); close(done) }()
		return h, cancel, done
	}
	a, stopA, doneA := open()
	rc := &receiver{seen: map[string]int{}, keys: jwksKeys(t, a.URL), events: make(chan struct{}, 1)}
	recvSrv := httptest.NewServer(rc)
	defer recvSrv.Close()
	root, created := a.RootOrg("Acme")
	servertest.WantError(
		t,
		createEndpoint(root, recvSrv.URL, "r", "BALANCE_CONFIRMED_UPDATES"),
		http.StatusBadRequest,
		3,
		"needs a chain provider",
	)
	servertest.WantError(
		t,
		createEndpoint(root, recvSrv.URL, "r", "PIZZA_UPDATES"),
		http.StatusBadRequest,
		3,
		"unknown event type",
	)
	servertest.MustOK(
		t,
		createEndpoint(root, recvSrv.URL, "r"),
	)
	l := root.Query("list_webhook_endpoints", nil)
	if l.Str("webhookEndpoints", "0", "url") != recvSrv.URL || l.Str("webhookEndpoints", "0", "isActive") != "true" {
		t.Fatalf("list_webhook_endpoints: %s", l.Raw)
	}
	const n = 30
	submit := func(h *servertest.Harness, from, to int) {
		c := h.Client(created.OrganizationID, root.Priv)
		var wg sync.WaitGroup
		for i := from; i < to; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				servertest.MustOK(
					t,
					c.Submit(
						"create_user_tag",
						"ACTIVITY_TYPE_CREATE_USER_TAG",
						map[string]any{"userTagName": fmt.Sprintf("t%d", i), "userIds": []string{}},
					),
				)
			}(i)
		}
		wg.Wait()
	}
	// The first half is submitted while the first process does not deliver, then it stops:
	// those events can only reach the receiver from the outbox, through the second process.
	stopA()
	<-doneA
	submit(a, 0, n/2)
	a.Close()
	b, stopB, doneB := open()
	defer func() { stopB(); <-doneB; b.Close() }()
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

// A parent organization's endpoint receives its sub-organizations' activities (the co-signing
// pattern: a sub-organization's CONSENSUS_NEEDED reaches the parent's endpoint), with the
// parent as X-Turnkey-Organization-Id and the sub-organization in the body.
func TestParentEndpointReceivesSubOrganizationActivities(t *testing.T) {
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.LoopbackWebhooks = true }))
	h.Server.Webhooks.Poll = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Server.Webhooks.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	rc := &receiver{
		seen:   map[string]int{},
		keys:   jwksKeys(t, h.URL),
		events: make(chan struct{}, 8),
		orgs:   map[string]int{},
	}
	recvSrv := httptest.NewServer(rc)
	defer recvSrv.Close()
	root, parent := h.RootOrg("Parent")
	servertest.MustOK(
		t,
		createEndpoint(root, recvSrv.URL, "co-signer", "ACTIVITY_UPDATES"),
	)
	// A sub-organization whose two root users must both approve.
	priv1, pub1 := h.NewKey()
	_, pub2 := h.NewKey()
	user := func(name, pub string) map[string]any {
		return map[string]any{
			"userName": name,
			"apiKeys": []any{
				map[string]any{"apiKeyName": "k", "publicKey": pub, "curveType": "API_KEY_CURVE_P256"},
			},
			"authenticators": []any{},
			"oauthProviders": []any{},
		}
	}
	s := root.Submit(
		"create_sub_organization",
		"ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7",
		map[string]any{"subOrganizationName": "end user",
			"rootQuorumThreshold": 2, "rootUsers": []any{user("u1", pub1), user("u2", pub2)}},
	)
	servertest.MustOK(t, s)
	subID := s.Str("activity", "result", "createSubOrganizationResultV7", "subOrganizationId")
	h.Advance(time.Millisecond)
	pending := h.Client(subID, priv1).
		Submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "t", "userIds": []string{}})
	if pending.Str("activity", "status") != "ACTIVITY_STATUS_CONSENSUS_NEEDED" {
		t.Fatalf("want CONSENSUS_NEEDED: %s", pending.Raw)
	}
	deadline := time.After(10 * time.Second)
	for {
		rc.mu.Lock()
		got := rc.orgs[parent.OrganizationID+" ACTIVITY_STATUS_CONSENSUS_NEEDED"]
		rc.mu.Unlock()
		if got == 1 {
			break
		}
		select {
		case <-rc.events:
		case <-deadline:
			t.Fatalf("the sub-organization's CONSENSUS_NEEDED did not reach the parent's endpoint: %v", rc.orgs)
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Fatalf("a delivery failed the receiver's checks: %s", rc.bad[0])
	}
	if rc.seen[pending.Str("activity", "id")] != 1 {
		t.Fatalf("the sub-organization's activity was delivered %d times", rc.seen[pending.Str("activity", "id")])
	}
}

// createEndpoint submits create_webhook_endpoint for url, subscribed to events (none: the member
// left out, as a client taking the default sends it).
func createEndpoint(c *servertest.Client, url, name string, events ...string) servertest.Response {
	p := map[string]any{"url": url, "name": name}
	if len(events) > 0 {
		subs := make([]any, len(events))
		for i, e := range events {
			subs[i] = map[string]any{"eventType": e}
		}
		p["subscriptions"] = subs
	}
	return c.Submit("create_webhook_endpoint", "ACTIVITY_TYPE_CREATE_WEBHOOK_ENDPOINT", p)
}
