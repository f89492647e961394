package api

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/latchkey/latchkey/internal/wire"
)

// FuzzQueryOrganization holds queryOrganization to json.Unmarshal's reading of organizationId.
func FuzzQueryOrganization(f *testing.F) {
	for _, s := range []string{
		`{"organizationId":"6c1e4d52-0f1c-4b8a-9a39-2f9b0c7d1e21"}`,
		` { "limit" : 10 , "organizationId" : "o", "x":{"organizationId":"inner"} } `,
		`{"organizationId":"a","organizationId":"b"}`, `{"OrganizationID":"o"}`, `{"organizationId":"\u006f"}`,
		`{"organizationId":null}`, `{"organizationId":1}`, `{"organizationId":"a\xffb"}`, `{"organızationId":"o"}`,
		`{"organizat\u0069onId":"o"}`, `{}`, `[]`, `null`, `{"organizationId":"o"`, `{"a":[1,{"b":"}"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := queryOrganization(raw, false)
		// On wire.CheckBody's word that raw is valid JSON, the same reading.
		if valid, fe := wire.CheckBody(raw); fe == nil && valid {
			got2, err2 := queryOrganization(raw, true)
			if got2 != got || fmt.Sprint(err2) != fmt.Sprint(err) {
				t.Fatalf("queryOrganization(%q, true) = %q, %v; unchecked: %q, %v", raw, got2, err2, got, err)
			}
		}
		var head struct {
			OrganizationID string `json:"organizationId"`
		}
		werr := json.Unmarshal(raw, &head)
		if got != head.OrganizationID || fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Fatalf("queryOrganization(%q) = %q, %v; json.Unmarshal: %q, %v", raw, got, err, head.OrganizationID, werr)
		}
	})
}
