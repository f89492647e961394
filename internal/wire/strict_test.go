package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
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

// What encoding/json reads as one member must be refused as a duplicate: it decodes escapes in
// member names and matches a struct's fields without regard to case, keeping the last.
func TestCheckJSONDuplicatesAsTheDecoderSeesThem(t *testing.T) {
	for _, body := range []string{
		`{"organizationId":"a","\u006frganizationId":"b"}`,
		`{"organizationId":"a","OrganizationID":"b"}`,
		`{"parameters":{"type":"a","TYPE":"b"}}`,
		"{\"k\":1,\"\u212a\":2}", // KELVIN SIGN folds to k
		"{\"s\":1,\"\u017f\":2}", // LATIN SMALL LETTER LONG S folds to s
		`{"Ab":1,"c":2,"d":3,"e":4,"f":5,"g":6,"h":7,"i":8,"j":9,"k":10,"l":11,"m":12,"n":13,"o":14,` +
			`"p":15,"q":16,"r":17,"s":18,"t":19,"aB":20}`,
	} {
		if CheckJSON([]byte(body)) == nil {
			t.Errorf("accepted %s", body)
		}
		// The decoder indeed reads one member from these (the reason to refuse them).
		var v struct {
			OrganizationID string `json:"organizationId"`
		}
		_ = json.Unmarshal([]byte(body), &v)
	}
	if CheckJSON([]byte(`{"é":1,"É":2}`)) == nil {
		t.Error(`accepted {"é":1,"É":2}, which encoding/json folds to one field name`)
	}
	if fe := CheckJSON([]byte(`{"a":1,"b":{"a":2},"c":[{"a":1},{"A":2}]}`)); fe != nil {
		t.Errorf("refused members of different objects: %v", fe)
	}
}

func TestCheckJSONDepth(t *testing.T) {
	ok := strings.Repeat(`{"a":`, MaxJSONDepth-1) + `[1]` + strings.Repeat(`}`, MaxJSONDepth-1)
	if fe := CheckJSON([]byte(ok)); fe != nil {
		t.Fatalf("refused %d levels: %v", MaxJSONDepth, fe)
	}
	for _, body := range []string{
		strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1),
		strings.Repeat(`{"a":`, MaxJSONDepth+1) + "1" + strings.Repeat("}", MaxJSONDepth+1),
		strings.Repeat("[", 100000), // unclosed: refused at the limit, not read to the end
	} {
		fe := CheckJSON([]byte(body))
		if fe == nil || !strings.Contains(fe.Error(), strconv.Itoa(MaxJSONDepth)) {
			t.Errorf("CheckJSON(%.20s…) = %v, want a refusal naming the depth limit", body, fe)
		}
	}
	// The field named is where the limit was crossed, with long names shortened.
	long := strings.Repeat("n", 10000)
	fe := CheckJSON([]byte(`{"` + long + `":` + strings.Repeat("[", MaxJSONDepth) + "]}"))
	if fe == nil || len(fe.Field) > 1000 || !strings.HasPrefix(fe.Field, "nnnn") {
		t.Fatalf("CheckJSON = %v, want a refusal naming the field, shortened", fe)
	}
}

// The strict pass is linear in the body, whatever its shape (issue 23: deep nesting and long
// member names over many elements cost the square of the body).
func TestCheckJSONCost(t *testing.T) {
	run := func(in []byte) { _ = CheckJSON(in) }
	costtest.Linear(t, 20000,
		costtest.Shape{Name: "deep arrays", Run: run, Make: func(n int) []byte {
			return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		}},
		costtest.Shape{Name: "deep objects", Run: run, Make: func(n int) []byte {
			return []byte(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
		}},
		costtest.Shape{Name: "long name over many elements", Run: run, Make: func(n int) []byte {
			return []byte(`{"` + strings.Repeat("n", n) + `":[` + strings.Repeat("1,", n) + `1]}`)
		}},
		costtest.Shape{Name: "long name over many members", Run: run, Make: func(n int) []byte {
			var b strings.Builder
			b.WriteString(`{"` + strings.Repeat("n", n) + `":[`)
			for i := 0; i < n/8; i++ {
				if i%(MaxObjectMembers/2) == 0 {
					b.WriteString(`{"z":1},{`)
				}
				fmt.Fprintf(&b, `"m%d":1,`, i)
			}
			b.WriteString(`"z":1}]}`)
			return []byte(b.String())
		}},
		costtest.Shape{Name: "many members, escaped names", Run: run, Make: func(n int) []byte {
			var b strings.Builder
			b.WriteString("[{")
			for i := 0; i < n/16; i++ {
				if i%(MaxObjectMembers/2) == 0 {
					b.WriteString(`"z":1},{`)
				}
				fmt.Fprintf(&b, `"\u00e9%d":1,`, i)
			}
			b.WriteString(`"z":1}]`)
			return []byte(b.String())
		}},
		costtest.Shape{Name: "many small objects", Run: run, Make: func(n int) []byte {
			return []byte("[" + strings.Repeat(`{"a":1,"b":2},`, n/8) + "{}]")
		}},
	)
}

func TestCheckJSONMembers(t *testing.T) {
	object := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{"outer":{`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"m%d":%d`, i, i)
		}
		b.WriteString("}}")
		return []byte(b.String())
	}
	if fe := CheckJSON(object(MaxObjectMembers)); fe != nil {
		t.Fatalf("refused %d members: %v", MaxObjectMembers, fe)
	}
	fe := CheckJSON(object(MaxObjectMembers + 1))
	if fe == nil || fe.Field != "outer" || !strings.Contains(fe.Error(), strconv.Itoa(MaxObjectMembers)) {
		t.Fatalf("CheckJSON = %v, want a refusal of outer naming the limit", fe)
	}
	// A duplicate past the first smallObject members is found through the map.
	dup := append(object(100)[:len(object(100))-2], []byte(`,"M7":1}}`)...)
	if fe := CheckJSON(dup); fe == nil || fe.Field != "outer.M7" {
		t.Fatalf("CheckJSON = %v, want a refusal of outer.M7", fe)
	}
}

// BenchmarkCheckJSONHostile is the strict pass over hostile bodies at the API's 2 MiB limit
// (docs/limits.md §2).
func BenchmarkCheckJSONHostile(b *testing.B) {
	const size = 2 << 20
	members := func(escaped bool) []byte {
		var w strings.Builder
		w.WriteString("[{")
		for i := 0; w.Len() < size-64; i++ {
			if i%(MaxObjectMembers/2) == 0 {
				w.WriteString(`"z":1},{`)
			}
			if escaped {
				fmt.Fprintf(&w, `"\u00e9%d":1,`, i)
			} else {
				fmt.Fprintf(&w, `"m%d":1,`, i)
			}
		}
		w.WriteString(`"z":1}]`)
		return []byte(w.String())
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"deep arrays", []byte(strings.Repeat("[", size/2) + strings.Repeat("]", size/2))},
		{"long name over many elements", []byte(`{"` + strings.Repeat("n", size/4) + `":[` +
			strings.Repeat("1,", size*3/8) + `1]}`)},
		{"many members", members(false)},
		{"many members, escaped names", members(true)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.body)))
			b.ReportAllocs()
			for b.Loop() {
				_ = CheckJSON(tc.body)
			}
		})
	}
}

// CheckBody's valid is json.Valid's answer for every body CheckJSON accepts: the fast readers
// skip json.Valid on its word (FuzzCheckBodyValid tries arbitrary bodies).
func TestCheckBodyValid(t *testing.T) {
	bodies := []string{
		``, ` `, `{}`, `[]`, `""`, `0`, `-0`, `1.5e+10`, `-12.5E-3`, `true`, `false`, `null`,
		`01`, `1.`, `.5`, `+1`, `1e`, `1e+`, `-`, `--1`, `tru`, `nul`, `truee`, `1 2`, `{}x`, `{} `,
		`{"a":1}`, `{"a":1,}`, `{,"a":1}`, `{"a":1,,"b":2}`, `{"a" 1}`, `{"a":}`, `{"a"}`, `{"a":1 "b":2}`,
		`[1,2]`, `[1,]`, `[,1]`, `[1,,2]`, `[1 2]`, `[}`, `{]`, `[:]`, `[1:2]`, `{"a":1]`, `[1}`,
		`"a\qb"`, `"a\/b"`, `"\u00e9"`, `"\u00g9"`, "\"a\tb\"", "\"a\x01\"", `"abc`, `"\`, `{"a":"b`,
		`{"a":[1,{"b":null}],"c":"d"}`, " \t\n\r{ \"a\" : [ 1 , 2 ] } \r\n", `[1.0e5,-0.0,0e0]`,
		`{"a":{"b":[true,false,null]}}`, `[[[[]]]]`, `[[[[]]]`, "[\xff]", `{"a":1}{}`, `[-]`, `[1e5.0]`,
	}
	for _, b := range bodies {
		valid, fe := CheckBody([]byte(b))
		if fe != nil {
			t.Fatalf("CheckBody(%q) refused: %v", b, fe)
		}
		if want := json.Valid([]byte(b)); valid != want {
			t.Errorf("CheckBody(%q) valid = %v, json.Valid %v", b, valid, want)
		}
	}
}

func FuzzCheckBodyValid(f *testing.F) {
	for _, b := range []string{`{"a":1}`, `[1,2,{"b":"c"}]`, `{"a":1,}`, `1e5`, `"\u00e9"`, subOrgV8} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		valid, fe := CheckBody(data)
		if fe != nil {
			if valid {
				t.Fatalf("CheckBody(%q) refused it and called it valid", data)
			}
			return
		}
		if want := json.Valid(data); valid != want {
			t.Fatalf("CheckBody(%q) valid = %v, json.Valid %v", data, valid, want)
		}
		if CheckJSON(data) != nil {
			t.Fatalf("CheckJSON refused what CheckBody accepted: %q", data)
		}
	})
}
