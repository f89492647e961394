package allowlists_test

import (
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/ops/allowlists"
	"github.com/latchkey/latchkey/internal/servertest"
)

func TestIPAllowlists(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	// The test client connects from 127.0.0.1.
	servertest.WantError(
		t,
		root.Submit(
			"set_ip_allowlist",
			"ACTIVITY_TYPE_SET_IP_ALLOWLIST",
			map[string]any{"rules": []any{map[string]any{"cidr": "10.0.0.0/8x"}}},
		),
		http.StatusBadRequest,
		3,
		"parameters.rules[0].cidr",
	)
	servertest.MustOK(
		t,
		root.Submit(
			"set_ip_allowlist",
			"ACTIVITY_TYPE_SET_IP_ALLOWLIST",
			map[string]any{"enabled": true, "rules": []any{
				map[string]any{"cidr": "127.0.0.0/8", "label": "loopback"}, map[string]any{"cidr": "2001:db8::/32"}}},
		),
	)
	g := root.Query("get_ip_allowlist", nil)
	servertest.MustOK(t, g)
	if g.Str("allowlist", "rules", "0", "cidr") != "127.0.0.0/8" || g.Str("allowlist", "enabled") != "true" ||
		g.Str("allowlist", "onEvaluationError") != "DENY" {
		t.Fatalf("get_ip_allowlist: %s", g.Raw)
	}
	// Now only 10.0.0.0/8: the loopback client is refused, on queries and submits alike.
	servertest.MustOK(
		t,
		root.Submit(
			"set_ip_allowlist",
			"ACTIVITY_TYPE_SET_IP_ALLOWLIST",
			map[string]any{"enabled": true, "rules": []any{map[string]any{"cidr": "10.0.0.0/8"}}},
		),
	)
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
	rm := xff(
		root,
		"/public/v1/submit/remove_ip_allowlist",
		root.SubmitBody("ACTIVITY_TYPE_REMOVE_IP_ALLOWLIST", map[string]any{}),
	)
	servertest.MustOK(t, rm)
	h.Server.API.TrustedProxies = nil
	servertest.MustOK(t, root.Query("whoami", nil))
	servertest.MustOK(
		t,
		root.Submit(
			"set_ip_allowlist",
			"ACTIVITY_TYPE_SET_IP_ALLOWLIST",
			map[string]any{"publicKey": root.Pub, "rules": []any{map[string]any{"cidr": "10.0.0.0/8"}}},
		),
	)
	servertest.WantError(t, root.Query("whoami", nil), http.StatusForbidden, 7, "IP allowlist")
}

// Bad allowlists are refused naming the field, before anything is stored; an allowlist is its
// organization's alone: another organization's key is not one of its keys, and another
// organization's requests are not filtered by it.
func TestAllowlistRefusalsAndOwnership(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	other, _ := h.RootOrg("Other")
	rules := func(cidrs ...string) []any {
		out := []any{}
		for _, c := range cidrs {
			out = append(out, map[string]any{"cidr": c})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		field  string
	}{
		{"enabled without rules", map[string]any{"enabled": true, "rules": rules()}, "parameters.rules"},
		{"unknown evaluation-error policy", map[string]any{"rules": rules("10.0.0.0/8"), "onEvaluationError": "MAYBE"}, "parameters.onEvaluationError"},
		{"second rule not a block", map[string]any{"rules": rules("10.0.0.0/8", "10.0.0.300")}, "parameters.rules[1].cidr"},
		{"too many rules", map[string]any{"rules": rules(make([]string, allowlists.MaxRules+1)...)}, "parameters.rules"},
		{"another organization's key", map[string]any{"publicKey": other.Pub, "rules": rules("10.0.0.0/8")}, "parameters.publicKey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.Advance(time.Millisecond)
			servertest.WantError(
				t,
				root.Submit("set_ip_allowlist", "ACTIVITY_TYPE_SET_IP_ALLOWLIST", tc.params),
				http.StatusBadRequest,
				3,
				tc.field,
			)
		})
	}
	if g := root.MustQuery("get_ip_allowlist", nil); g.Len("allowlist", "rules") != 0 ||
		g.Str("allowlist", "enabled") != "" {
		t.Fatalf("a refused allowlist was stored: %s", g.Raw)
	}
	servertest.WantError(
		t,
		root.Query("get_ip_allowlist", map[string]any{"publicKey": other.Pub}),
		http.StatusNotFound,
		5,
		"no API key with public key",
	)

	// A bare address is its /32 (stored disabled first, to read it back); once enabled, Acme's
	// allowlist refuses the loopback client and leaves Other's requests alone.
	root.MustSubmit(
		"set_ip_allowlist",
		"ACTIVITY_TYPE_SET_IP_ALLOWLIST",
		map[string]any{"enabled": false, "rules": rules("10.1.2.3")},
	)
	if g := root.MustQuery("get_ip_allowlist", nil); g.Str("allowlist", "rules", "0", "cidr") != "10.1.2.3/32" ||
		g.Str("allowlist", "enabled") != "false" {
		t.Fatalf("a bare address: %s", g.Raw)
	}
	h.Advance(time.Millisecond)
	root.MustSubmit("set_ip_allowlist", "ACTIVITY_TYPE_SET_IP_ALLOWLIST", map[string]any{"rules": rules("10.1.2.3")})
	servertest.WantError(t, root.Query("whoami", nil), http.StatusForbidden, 7, "IP allowlist")
	other.MustQuery("whoami", nil)
	if g := other.MustQuery("get_ip_allowlist", nil); g.Len("allowlist", "rules") != 0 {
		t.Fatalf("Other sees Acme's allowlist: %s", g.Raw)
	}
}
