package authproxy

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/wire/proxy"
)

// The proxy serves exactly the operations of spec/auth_proxy.swagger.json, as the generated
// table (internal/wire/proxy) lists them: none missing, none extra.
func TestRoutesAreTheGeneratedTable(t *testing.T) {
	routes := (&Server{}).routes()
	for _, op := range proxy.Ops {
		if routes[op.Path] == nil {
			t.Errorf("the swagger's %s is not served", op.Route)
		}
	}
	for path := range routes {
		if _, ok := proxy.Lookup(path); !ok {
			t.Errorf("/v1/%s is served but not in the swagger", path)
		}
	}
}

// jsonMembers is the set of JSON member names a struct type decodes.
func jsonMembers(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			for m := range jsonMembers(f.Type) {
				out[m] = true
			}
			continue
		}
		if name != "-" && name != "" && f.IsExported() {
			out[name] = true
		}
	}
	return out
}

// Each operation's request struct (hand-written: it also accepts the alternative spellings
// Turnkey's clients send, e.g. client_signature) reads every member of the generated request
// type, except those listed here with the reason; the wallet-kit operations take no body.
func TestRequestStructsReadEveryGeneratedMember(t *testing.T) {
	hand := map[string]any{
		"signup": signupRequest{}, "signup_v2": signupRequest{},
		"otp_init": otpInitRequest{}, "otp_init_v2": otpInitRequest{},
		"otp_verify": otpVerifyRequest{}, "otp_verify_v2": otpVerifyV2Request{},
		"otp_login": otpLoginRequest{}, "otp_login_v2": otpLoginRequest{},
		"oauth2_authenticate": oauth2Request{}, "oauth_login": oauthLoginRequest{}, "account": accountRequest{},
	}
	unread := map[string]string{}
	for _, op := range proxy.Ops {
		want := jsonMembers(reflect.TypeOf(op.NewRequest()).Elem())
		h, ok := hand[op.Path]
		if !ok {
			if len(want) > 0 {
				t.Errorf("%s: the generated request has members %v but the proxy reads no body", op.Path, want)
			}
			continue
		}
		have := jsonMembers(reflect.TypeOf(h))
		var missing []string
		for m := range want {
			if !have[m] && unread[op.Path+"."+m] == "" {
				missing = append(missing, m)
			}
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			t.Errorf("%s: the proxy does not read %v of the generated request", op.Path, missing)
		}
	}
}
