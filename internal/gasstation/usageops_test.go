package gasstation_test

import (
	"context"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/gasstation"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

const upsertType = "ACTIVITY_TYPE_UPSERT_GAS_USAGE_CONFIG"

// upsert_gas_usage_config through the API: each bad field is a 400 naming it, a
// sub-organization cannot set limits, a first configuration needs the limits, a later one
// changes only what it names; get_gas_usage answers the sub-organization's own limit and usage
// and the billing organization's organization-wide ones.
func TestUsageConfigAndGetGasUsage(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	subID, _, subPriv := h.EndUser(root, "alice", "alice@example.com")
	sub := h.Client(subID, subPriv)
	otherSubID, _, _ := h.EndUser(root, "bob", "bob@example.com")

	usage := func(c *servertest.Client, org string) (minutes, limit, used string) {
		t.Helper()
		r := h.Client(org, c.Priv).MustQuery("get_gas_usage", nil)
		return r.Str("windowDurationMinutes"), r.Str("windowLimitUsd"), r.Str("usageUsd")
	}
	if m, l, u := usage(root, root.Org); m != "0" || l != "0.00" || u != "0.00" {
		t.Fatalf("unconfigured: %s %s %s", m, l, u)
	}

	good := map[string]any{"enabled": true, "orgWindowLimitUsd": "100", "subOrgWindowLimitUsd": "2.5",
		"windowDurationMinutes": "60"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tt := range []struct {
		params map[string]any
		field  string
	}{
		{with("orgWindowLimitUsd", "abc"), "parameters.orgWindowLimitUsd"},
		{with("orgWindowLimitUsd", "1.0000001"), "parameters.orgWindowLimitUsd"},
		{with("orgWindowLimitUsd", "-1"), "parameters.orgWindowLimitUsd"},
		{with("subOrgWindowLimitUsd", "1e3"), "parameters.subOrgWindowLimitUsd"},
		{with("subOrgWindowLimitUsd", "99999999999"), "parameters.subOrgWindowLimitUsd"},
		{with("windowDurationMinutes", "43201"), "parameters.windowDurationMinutes"},
		{with("windowDurationMinutes", "0"), "parameters.windowDurationMinutes"},
		{with("windowDurationMinutes", "1.5"), "parameters.windowDurationMinutes"},
		// a first configuration names every limit and the window
		{with("windowDurationMinutes", nil), "parameters.windowDurationMinutes"},
		{with("orgWindowLimitUsd", nil), "parameters.orgWindowLimitUsd"},
		{with("subOrgWindowLimitUsd", ""), "parameters.subOrgWindowLimitUsd"},
	} {
		servertest.WantError(t, root.Submit("upsert_gas_usage_config", upsertType, tt.params), http.StatusBadRequest, 3,
			tt.field)
	}
	servertest.WantError(t, sub.Submit("upsert_gas_usage_config", upsertType, good), http.StatusBadRequest, 9,
		"set in the billing organization")

	r := root.MustSubmit("upsert_gas_usage_config", upsertType, good)
	cfgID := r.Result("upsertGasUsageConfigResult", "gasUsageConfigId")
	if cfgID == "" {
		t.Fatalf("no gasUsageConfigId: %s", r.Raw)
	}
	if m, l, u := usage(root, root.Org); m != "60" || l != "100.00" || u != "0.00" {
		t.Fatalf("billing organization: %s %s %s", m, l, u)
	}
	if m, l, u := usage(sub, subID); m != "60" || l != "2.50" || u != "0.00" {
		t.Fatalf("sub-organization: %s %s %s", m, l, u)
	}

	// Usage counted by sends (Reserve, as the sponsored sends do).
	ctx := context.Background()
	reserve := func(org, ref, usd string) error {
		v, _ := new(big.Rat).SetString(usd)
		return h.Server.Store.Update(ctx, func(tx store.Tx) error {
			return gasstation.Reserve(ctx, tx, org, "eip155:1", ref, v, h.Now())
		})
	}
	if err := reserve(subID, "s1", "1.25"); err != nil {
		t.Fatal(err)
	}
	if err := reserve(otherSubID, "s2", "2"); err != nil {
		t.Fatal(err)
	}
	if err := reserve(subID, "s3", "1.26"); err == nil {
		t.Fatal("a reservation past the sub-organization's limit passed")
	}
	if _, l, u := usage(sub, subID); l != "2.50" || u != "1.25" {
		t.Fatalf("sub-organization: %s %s", l, u)
	}
	// The parent reads a sub-organization's usage as the sub-organization sees it.
	if _, l, u := usage(root, subID); l != "2.50" || u != "1.25" {
		t.Fatalf("sub-organization read by its parent: %s %s", l, u)
	}
	if _, l, u := usage(root, root.Org); l != "100.00" || u != "3.25" {
		t.Fatalf("organization-wide: %s %s", l, u)
	}

	// A later upsert changes what it names and keeps the rest and the id; disabling refuses.
	r = root.MustSubmit("upsert_gas_usage_config", upsertType, map[string]any{"enabled": false,
		"orgWindowLimitUsd": "", "subOrgWindowLimitUsd": "", "windowDurationMinutes": "120"})
	if r.Result("upsertGasUsageConfigResult", "gasUsageConfigId") != cfgID {
		t.Fatalf("the config id changed: %s", r.Raw)
	}
	if m, l, _ := usage(sub, subID); m != "120" || l != "2.50" {
		t.Fatalf("after a partial update: %s %s", m, l)
	}
	if err := reserve(subID, "s4", "0"); err == nil || !strings.Contains(err.Error(), "upsert_gas_usage_config") {
		t.Fatalf("a disabled configuration: %v", err)
	}
}
