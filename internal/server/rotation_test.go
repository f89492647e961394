package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/session"

	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// A server key rotation as a client sees it: the next notarizer and signer keys are published
// beside the current ones in /.well-known/latchkey.json for the overlap, take over at the set
// time, and a session signed by the replaced key still verifies during the grace period.
func TestServerKeyRotationAsClientsSeeIt(t *testing.T) {
	h := servertest.New(t)
	h.Server.Keys.Now = h.Now
	ctx := context.Background()
	root, created := h.RootOrg("Acme")
	wellKnown := func() server.PublicKeys {
		t.Helper()
		resp, err := http.Get(h.URL + "/.well-known/latchkey.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var pk server.PublicKeys
		if err := json.NewDecoder(resp.Body).Decode(&pk); err != nil {
			t.Fatal(err)
		}
		return pk
	}
	before := wellKnown()
	if len(before.Rotations) != 0 {
		t.Fatalf("rotations before any: %+v", before.Rotations)
	}
	var next = map[custody.ServerKey]string{}
	for _, k := range []custody.ServerKey{custody.Notarizer, custody.Signer} {
		r, err := custody.RotateServerKey(
			ctx,
			h.Server.Store,
			h.Server.Keyring,
			k,
			10*time.Minute,
			30*time.Minute,
			h.Now(),
		)
		if err != nil {
			t.Fatal(err)
		}
		next[k] = r.Next
	}
	if _, err := custody.RotateServerKey(ctx, h.Server.Store, h.Server.Keyring, custody.Signer, time.Minute, time.Hour, h.Now()); err == nil ||
		!strings.Contains(err.Error(), "already has a rotation pending") {
		t.Fatalf("a second pending rotation: %v", err)
	}
	if _, err := custody.RotateServerKey(ctx, h.Server.Store, h.Server.Keyring, custody.Webhook, time.Minute, time.Hour, h.Now()); err == nil ||
		!strings.Contains(err.Error(), "not supported") {
		t.Fatalf("rotating the webhook key: %v", err)
	}
	if err := h.Server.Keys.Reload(ctx, h.Server.Store, h.Server.Keyring); err != nil {
		t.Fatal(err)
	}
	during := wellKnown()
	if during.SignerPublicKey != before.SignerPublicKey || during.NotarizerPublicKey != before.NotarizerPublicKey ||
		len(during.Rotations) != 2 {
		t.Fatalf("during the overlap: %+v", during)
	}
	for _, r := range during.Rotations {
		if r.Next != next[r.Key] || r.Current == r.Next || r.Previous != "" {
			t.Fatalf("published rotation %+v", r)
		}
	}
	readOnly := func() string {
		r := root.Submit("create_read_only_session", "ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION", map[string]any{})
		servertest.MustOK(t, r)
		return r.Str("activity", "result", "createReadOnlySessionResult", "session")
	}
	whoami := func(tok string) servertest.Response {
		return h.Post(
			"/public/v1/query/whoami",
			[]byte(`{"organizationId":"`+created.OrganizationID+`"}`),
			map[string]string{"X-Session": tok},
		)
	}
	old := readOnly()
	oldKey := h.Server.Keys.Public(custody.Notarizer)
	if _, err := session.Parse(old, oldKey, h.Now()); err != nil {
		t.Fatalf("the session before the switch is not the current key's: %v", err)
	}

	h.Advance(11 * time.Minute)
	after := wellKnown()
	if after.NotarizerPublicKey != next[custody.Notarizer] || after.SignerPublicKey != next[custody.Signer] {
		t.Fatalf("after the overlap the next keys are not in use: %+v", after)
	}
	for _, r := range after.Rotations {
		if r.Current != next[r.Key] || r.Previous == "" || r.Next != "" {
			t.Fatalf("published rotation after the switch %+v", r)
		}
	}
	servertest.MustOK(t, whoami(old)) // the replaced key still verifies in its grace period
	fresh := readOnly()
	if _, err := session.Parse(fresh, oldKey, h.Now()); err == nil {
		t.Fatal("a session made after the switch verifies with the replaced key")
	}
	if _, err := session.Parse(fresh, h.Server.Keys.Public(custody.Notarizer), h.Now()); err != nil {
		t.Fatal(err)
	}
	servertest.MustOK(t, whoami(fresh))

	// After the grace period the replaced key no longer verifies anything, and the well-known
	// document lists no rotation.
	h.Advance(30 * time.Minute)
	if got := whoami(old); got.Status != http.StatusUnauthorized {
		t.Fatalf("a session of the replaced key after its grace period: %d %s", got.Status, got.Raw)
	}
	servertest.MustOK(t, whoami(fresh))
	if r := wellKnown().Rotations; len(r) != 0 {
		t.Fatalf("rotations after the grace period: %+v", r)
	}
}
