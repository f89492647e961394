package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/servertest"
)

// FuzzAPI sends arbitrary bodies to arbitrary paths, stamped by a real root key (so they reach
// the engine) or with an arbitrary stamp header. No input may make the server answer 500 or
// panic.
func FuzzAPI(f *testing.F) {
	h := servertest.New(f)
	root, _ := h.RootOrg("Fuzz")
	org := root.Org
	f.Add(
		"submit/create_user_tag",
		`{"type":"ACTIVITY_TYPE_CREATE_USER_TAG","timestampMs":"0","organizationId":"`+org+`","parameters":{"userTagName":"a","userIds":[]}}`,
		true,
		"",
	)
	f.Add(
		"submit/create_sub_organization",
		`{"type":"ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8","timestampMs":"1","organizationId":"`+org+`","parameters":{"rootUsers":[{}],"rootQuorumThreshold":-1}}`,
		true,
		"",
	)
	f.Add("query/list_activities", `{"organizationId":"`+org+`","paginationOptions":{"limit":"x"}}`, true, "")
	f.Add("query/get_user", `{"organizationId":"`+org+`","userId":null}`, false, "eyJwdWJsaWNLZXkiOiIwMiJ9")
	f.Add(
		"submit/create_users",
		`{"type":"ACTIVITY_TYPE_CREATE_USERS","organizationId":"`+org+`","parameters":{"users":[{"authenticators":[{"attestation":{}}]}]}}`,
		true,
		"",
	)
	f.Fuzz(func(t *testing.T, path, body string, sign bool, stampHeader string) {
		if _, err := url.ParseRequestURI("/public/v1/" + path); err != nil {
			t.Skip("not a path an HTTP client can send")
		}
		if !sign && !validHeaderValue(stampHeader) {
			t.Skip("not a header value an HTTP client can send")
		}
		body = strings.ReplaceAll(body, `"timestampMs":"0"`, `"timestampMs":"`+itoa(h.Now().UnixMilli())+`"`)
		var r servertest.Response
		if sign {
			h.T = t
			r = root.Post("/public/v1/"+path, []byte(body))
		} else {
			h.T = t
			r = h.Post("/public/v1/"+path, []byte(body), map[string]string{"X-Stamp": stampHeader})
		}
		if r.Status >= 500 && r.Status != http.StatusNotImplemented && r.Status != http.StatusServiceUnavailable {
			t.Fatalf("status %d for %s %q: %s", r.Status, path, body, r.Raw)
		}
	})
}

// validHeaderValue reports whether net/http's client would send v as a header value (RFC 7230
// field-value: no control characters other than tab).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func itoa(n int64) string {
	b := []byte{}
	if n == 0 {
		return "0"
	}
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
