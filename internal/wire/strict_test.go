package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestCheckJSON(t *testing.T) {
	tests := []struct {
		name, body, field string // field "" = accepted
	}{
		{"plain", `{"a":"b","c":[1,{"d":"é"}]}`, ""},
		{"escaped characters", `{"a":"\u00e9\n\"\\","b":"\ud83d\ude00"}`, ""},
		{"same key in sibling objects", `{"x":{"a":1},"y":{"a":2},"z":[{"a":1},{"a":2}]}`, ""},
		{"duplicate top-level member", `{"organizationId":"a","organizationId":"b"}`, "organizationId"},
		{
			"duplicate nested member",
			`{"parameters":{"accounts":[{"path":"a"},{"path":"b","path":"c"}]}}`,
			"parameters.accounts[1].path",
		},
		{"invalid UTF-8", "{\"name\":\"caf\xe9\"}", "name"},
		{"invalid UTF-8 in a key", "{\"n\xffme\":1}", "body"},
		{"truncated UTF-8", "{\"a\":[\"\xe2\x82\"]}", "a[0]"},
		{"lone high surrogate", `{"a":"\ud800"}`, "a"},
		{"lone low surrogate", `{"a":"\udc00x"}`, "a"},
		{"high surrogate then a letter", `{"a":"\ud800\u0041"}`, "a"},
		{"not JSON at all is left to the decoder", `{"a":`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fe := CheckJSON([]byte(tc.body))
			switch {
			case tc.field == "" && fe != nil:
				t.Fatalf("refused: %v", fe)
			case tc.field != "" && (fe == nil || fe.Field != tc.field):
				t.Fatalf("CheckJSON = %v, want a refusal of %s", fe, tc.field)
			}
		})
	}
}

func TestCheckText(t *testing.T) {
	type inner struct {
		WalletName string `json:"walletName"`
		Path       string `json:"path"`
	}
	type req struct {
		Notes    string  `json:"notes"`
		Accounts []inner `json:"accounts"`
		Payload  string  `json:"payload"`
	}
	tests := []struct {
		name  string
		v     req
		field string
	}{
		{"fine", req{Notes: "a\nb\tc", Accounts: []inner{{WalletName: "w", Path: "m/0"}}, Payload: "\x00\x01"}, ""},
		{"name with NUL", req{Accounts: []inner{{}, {WalletName: "w\x00"}}}, "parameters.accounts[1].walletName"},
		{"name with ESC", req{Accounts: []inner{{WalletName: "\x1b[31m"}}}, "parameters.accounts[0].walletName"},
		{
			"long name",
			req{Accounts: []inner{{WalletName: strings.Repeat("w", MaxNameBytes+1)}}},
			"parameters.accounts[0].walletName",
		},
		{"notes with NUL", req{Notes: "a\x00"}, "parameters.notes"},
		{"long notes", req{Notes: strings.Repeat("n", MaxTextBytes+1)}, "parameters.notes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckText(&tc.v, "parameters")
			fe, _ := err.(*FieldError)
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.field != "" && (fe == nil || fe.Field != tc.field):
				t.Fatalf("CheckText = %v, want a refusal of %s", err, tc.field)
			}
		})
	}
}

// BenchmarkCheckJSON is the strict pass over a sign_raw_payload body, which every request
// pays once before its stamp is checked.
func BenchmarkCheckJSON(b *testing.B) {
	body := []byte(
		`{"type":"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2","timestampMs":"1700000000000","organizationId":"11111111-2222-3333-4444-555555555555",` +
			`"parameters":{"signWith":"0x8c2D6e3C1B0a9f4E5d7C6b5A4f3e2d1c0b9a8f7E","payload":"0x` + strings.Repeat(
			"ab",
			32,
		) +
			`","encoding":"PAYLOAD_ENCODING_HEXADECIMAL","hashFunction":"HASH_FUNCTION_NO_OP"}}`,
	)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if CheckJSON(body) != nil {
			b.Fatal("refused")
		}
	}
}

// TestCheckTextPaths compares the refused field's name with the eager walk's, through structs,
// lists, maps and pointers, under a path and under none.
func TestCheckTextPaths(t *testing.T) {
	type inner struct {
		UserName string            `json:"userName"`
		Tags     map[string]string `json:"tagName"`
	}
	type req struct {
		Users [][]*inner       `json:"users"`
		Extra map[string]inner `json:"extra"`
		Name  *string          `json:"name,omitempty"`
	}
	bad := "x\x00"
	for _, v := range []req{
		{Users: [][]*inner{{{UserName: "a"}, nil, {UserName: bad}}}},
		{Users: [][]*inner{{}, {{Tags: map[string]string{"k": bad}}}}},
		{Extra: map[string]inner{"e": {UserName: bad}}},
		{Name: &bad},
		{Users: [][]*inner{{{UserName: "fine"}}}},
	} {
		for _, path := range []string{"parameters", ""} {
			got := CheckText(&v, path)
			want := checkTextEager(reflect.ValueOf(&v), path, "")
			if fmt.Sprint(got) != fmt.Sprint(want) || (want != nil) != (got != nil) {
				t.Errorf("CheckText(%+v, %q) = %v, want %v", v, path, got, want)
			}
		}
	}
}

// BenchmarkCheckText checks a create_sub_organization intent, against the eager walk.
func BenchmarkCheckText(b *testing.B) {
	op, _ := Lookup(Submit, "create_sub_organization")
	v := op.Versions[0].NewIntent()
	var env struct{ Parameters json.RawMessage }
	if err := json.Unmarshal([]byte(subOrgV8), &env); err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(env.Parameters, v); err != nil {
		b.Fatal(err)
	}
	b.Run("lazy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := CheckText(v, "parameters"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("eager", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := checkTextEager(reflect.ValueOf(v), "parameters", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}
