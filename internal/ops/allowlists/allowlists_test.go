package allowlists_test

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/latchkey/latchkey/internal/servertest"
)

func TestIPAllowlists(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	// The test client connects from 127.0.0.1.
	servertest.WantError(t, root.Submit("set_ip_allowlist", "ACTIVITY_TYPE_SET_IP_ALLOWLIST", map[string]any{"rules": []any{map[string]any{"cidr": "10.0.0.0/8x"}}}), http.StatusBadRequest, 3, "parameters.rules[0].cidr")
	servertest.MustOK(t, root.Submit("set_ip_allowlist", "ACTIVITY_TYPE_SET_IP_ALLOWLIST", map[string]any{"enabled": true, "rules": []any{
		map[string]any{"cidr": "127.0.0.0/8", "label": "loopback"}, map[string]any{"cidr": "2001:db8::/32"}}}))
	g := root.Query("get_ip_allowlist", nil)
	servertest.MustOK(t, g)
	if g.Str("allowlist", "rules", "0", "cidr") != "127.0.0.0/8" || g.Str("allowlist", "enabled") != "true" || g.Str("allowlist", "onEvaluationError") != "DENY" {
		t.Fatalf("get_ip_allowlist: %s", g.Raw)
	}
	// Now only 10.0.0.0/8: the loopback client is refused, on queries and submits alike.
	servertest.MustOK(t, root.Submit("set_ip_allowlist", "ACTIVITY_TYPE_SET_IP_ALLOWLIST", map[string]any{"enabled": true, "rules": []any{map[string]any{"cidr": "10.0.0.0/8"}}}))
	servertest.WantError(t, root.Query("whoami", nil), http.StatusForbidden, 7, "IP allowlist")
	// Behind a trusted proxy, X-Forwarded-For names the client.
	h.Server.API.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	body := []byte(`{"organizationId":"` + root.Org + `"}`)
	name, value, _ := root.Stamper.Stamp(body)
	r := h.Post("/public/v1/query/whoami", body, map[string]string{name: value, "X-Forwarded-For": "10.1.2.3"})
	servertest.MustOK(t, r)
	r = h.Post("/public/v1/query/whoami", body, map[string]string{name: value, "X-Forwarded-For": "192.168.1.1"})
	servertest.WantError(t, r, http.StatusForbidden, 7, "192.168.1.1")
	h.Server.API.TrustedProxies = nil
	// A key-level allowlist applies to that key only.
	h.Server.API.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	xff := func(c *servertest.Client, path string, b []byte) servertest.Response {
		n, v, _ := c.Stamper.Stamp(b)
		return h.Post(path, b, map[string]string{n: v, "X-Forwarded-For": "10.9.9.9"})
	}
	rm := xff(root, "/public/v1/submit/remove_ip_allowlist", root.SubmitBody("ACTIVITY_TYPE_REMOVE_IP_ALLOWLIST", map[string]any{}))
	servertest.MustOK(t, rm)
	h.Server.API.TrustedProxies = nil
	servertest.MustOK(t, root.Query("whoami", nil))
	servertest.MustOK(t, root.Submit("set_ip_allowlist", "ACTIVITY_TYPE_SET_IP_ALLOWLIST", map[string]any{"publicKey": root.Pub, "rules": []any{map[string]any{"cidr": "10.0.0.0/8"}}}))
	servertest.WantError(t, root.Query("whoami", nil), http.StatusForbidden, 7, "IP allowlist")
}
