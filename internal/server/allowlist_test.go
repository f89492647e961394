package server

import (
	"net/http"
	"net/netip"
	"testing"
	"time"
)

func TestIPAllowlists(t *testing.T) {
	h := newHarness(t)
	root, _ := h.rootOrg("Acme")
	// The test client connects from 127.0.0.1.
	wantError(t, root.submit("set_ip_allowlist", "ACTIVITY_TYPE_SET_IP_ALLOWLIST", map[string]any{"rules": []any{map[string]any{"cidr": "10.0.0.0/8x"}}}), http.StatusBadRequest, 3, "parameters.rules[0].cidr")
	mustOK(t, root.submit("set_ip_allowlist", "ACTIVITY_TYPE_SET_IP_ALLOWLIST", map[string]any{"enabled": true, "rules": []any{
		map[string]any{"cidr": "127.0.0.0/8", "label": "loopback"}, map[string]any{"cidr": "2001:db8::/32"}}}))
	g := root.query("get_ip_allowlist", nil)
	mustOK(t, g)
	if g.str("allowlist", "rules", "0", "cidr") != "127.0.0.0/8" || g.str("allowlist", "enabled") != "true" || g.str("allowlist", "onEvaluationError") != "DENY" {
		t.Fatalf("get_ip_allowlist: %s", g.raw)
	}
	// Now only 10.0.0.0/8: the loopback client is refused, on queries and submits alike.
	mustOK(t, root.submit("set_ip_allowlist", "ACTIVITY_TYPE_SET_IP_ALLOWLIST", map[string]any{"enabled": true, "rules": []any{map[string]any{"cidr": "10.0.0.0/8"}}}))
	wantError(t, root.query("whoami", nil), http.StatusForbidden, 7, "IP allowlist")
	// Behind a trusted proxy, X-Forwarded-For names the client.
	h.s.API.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	body := []byte(`{"organizationId":"` + root.org + `"}`)
	name, value, _ := root.st.Stamp(body)
	r := h.raw("/public/v1/query/whoami", body, map[string]string{name: value, "X-Forwarded-For": "10.1.2.3"})
	mustOK(t, r)
	r = h.raw("/public/v1/query/whoami", body, map[string]string{name: value, "X-Forwarded-For": "192.168.1.1"})
	wantError(t, r, http.StatusForbidden, 7, "192.168.1.1")
	h.s.API.TrustedProxies = nil
	// A key-level allowlist applies to that key only.
	h.s.API.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	xff := func(c *client, path string, b []byte) response {
		n, v, _ := c.st.Stamp(b)
		return h.raw(path, b, map[string]string{n: v, "X-Forwarded-For": "10.9.9.9"})
	}
	rm := xff(root, "/public/v1/submit/remove_ip_allowlist", root.submitBody("ACTIVITY_TYPE_REMOVE_IP_ALLOWLIST", map[string]any{}))
	mustOK(t, rm)
	h.s.API.TrustedProxies = nil
	mustOK(t, root.query("whoami", nil))
	mustOK(t, root.submit("set_ip_allowlist", "ACTIVITY_TYPE_SET_IP_ALLOWLIST", map[string]any{"publicKey": root.pub, "rules": []any{map[string]any{"cidr": "10.0.0.0/8"}}}))
	wantError(t, root.query("whoami", nil), http.StatusForbidden, 7, "IP allowlist")
}

func TestReadOnlySession(t *testing.T) {
	h := newHarness(t)
	root, created := h.rootOrg("Acme")
	r := root.submit("create_read_only_session", "ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION", map[string]any{})
	mustOK(t, r)
	tok := r.str("activity", "result", "createReadOnlySessionResult", "session")
	if tok == "" || r.str("activity", "result", "createReadOnlySessionResult", "sessionExpiry") == "" {
		t.Fatalf("no session: %s", r.raw)
	}
	body := []byte(`{"organizationId":"` + created.OrganizationID + `"}`)
	w := h.raw("/public/v1/query/whoami", body, map[string]string{"X-Session": tok})
	mustOK(t, w)
	if w.str("userId") != created.UserID {
		t.Fatalf("whoami by session: %s", w.raw)
	}
	// Read-only: no submits.
	sub := root.submitBody("ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "x", "userIds": []string{}})
	wantError(t, h.raw("/public/v1/submit/create_user_tag", sub, map[string]string{"X-Session": tok}), http.StatusForbidden, 7, "read-only session")
	// Tampered and expired tokens are refused.
	// (Change a character well inside the signature: the last one carries unused bits.)
	i := len(tok) - 10
	flipped := byte('A')
	if tok[i] == 'A' {
		flipped = 'B'
	}
	wantError(t, h.raw("/public/v1/query/whoami", body, map[string]string{"X-Session": tok[:i] + string(flipped) + tok[i+1:]}), http.StatusUnauthorized, 16, "invalid X-Session")
	h.advance(2 * time.Hour)
	wantError(t, h.raw("/public/v1/query/whoami", body, map[string]string{"X-Session": tok}), http.StatusUnauthorized, 16, "expired")
}
