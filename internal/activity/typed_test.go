package activity

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/wire"
)

func TestRegistryRefusesAVersionWithoutHandler(t *testing.T) {
	noop := func(*Exec, *wire.CreateOauthProvidersIntent) (any, error) { return nil, nil }
	noopV2 := func(*Exec, *wire.CreateOauthProvidersIntentV2) (any, error) { return nil, nil }
	tests := []struct {
		name  string
		op    Operation
		panic string // "" = registers
	}{
		{"the V1 handler alone misses V2", Operation{Path: "create_oauth_providers", Execute: On(noop)},
			`Execute of submit path "create_oauth_providers" has no handler for ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2`},
		{"both versions", Operation{Path: "create_oauth_providers", Execute: Versions(On(noopV2), On(noop))}, ""},
		{
			"a SelfUser typed on V1 only",
			Operation{Path: "create_oauth_providers", Execute: Versions(On(noopV2), On(noop)),
				SelfUser: User(func(_ *Exec, in *wire.CreateOauthProvidersIntent) string { return in.UserId })},
			`SelfUser of submit path "create_oauth_providers" has no handler for ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2`,
		},
		{"a handler of another path's intent", Operation{Path: "delete_oauth_providers", Execute: On(noop)},
			`has no handler for ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS`},
		{"no Execute", Operation{Path: "delete_oauth_providers"}, "has no Execute"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				p := recover()
				switch {
				case tc.panic == "" && p != nil:
					t.Fatalf("panicked: %v", p)
				case tc.panic != "" && (p == nil || !strings.Contains(p.(string), tc.panic)):
					t.Fatalf("panic = %v, want %q", p, tc.panic)
				}
			}()
			NewRegistry().Submit(tc.op)
		})
	}
}

func TestQueryHandlerTypedOnItsRequest(t *testing.T) {
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), `query path "get_wallets"`) {
			t.Fatalf("panic = %v", p)
		}
	}()
	NewRegistry().Query(QueryOp{Path: "get_wallets", Execute: Query(func(*Read, *wire.GetUsersRequest) (any, error) { return nil, nil })})
}

// A typed function refuses an intent of a type it was not made for instead of asserting it.
func TestTypedCallRefusesForeignIntent(t *testing.T) {
	f := On(func(*Exec, *wire.CreateOauthProvidersIntent) (any, error) { return "ran", nil })
	if _, err := f.call(&Exec{}, &wire.CreateOauthProvidersIntentV2{}); err == nil {
		t.Fatal("a foreign intent type was accepted")
	}
	if v, err := f.call(&Exec{}, &wire.CreateOauthProvidersIntent{}); err != nil || v != "ran" {
		t.Fatalf("call = %v, %v", v, err)
	}
	r := Redactor(func(in *wire.OtpAuthIntent) any { c := *in; c.OtpCode = "[redacted]"; return &c })
	if got := r.call(&wire.VerifyOtpIntent{OtpCode: "123456"}); got == nil || strings.Contains(toJSON(got), "123456") {
		t.Fatalf("a foreign intent was shown unredacted: %v", got)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
