package wire

import (
	"strings"
	"testing"
)

func TestEachMember(t *testing.T) {
	for raw, want := range map[string]string{
		`{}`: "",
		` { "a" : 1 , "b\"c" : "}" , "d":{"e":["]",{"f":"\\"}]},"g":null,"h":-1.5e3,"i":true} `: `a=1|` +
			`b\"c!="}"|d={"e":["]",{"f":"\\"}]}|g=null|h=-1.5e3|i=true|`,
		`[1]`:  "not an object",
		`"{}"`: "not an object",
	} {
		var got strings.Builder
		ok := EachMember([]byte(raw), func(name []byte, escaped bool, v []byte) bool {
			got.Write(name)
			if escaped {
				got.WriteString("!")
			}
			got.WriteString("=" + string(v) + "|")
			return true
		})
		if !ok {
			got.WriteString("not an object")
		}
		if got.String() != want {
			t.Errorf("EachMember(%s): %s, want %s", raw, got.String(), want)
		}
	}
	if EachMember([]byte(`{"a":1,"b":2}`), func([]byte, bool, []byte) bool { return false }) {
		t.Error("EachMember went on after fn returned false")
	}
}

func TestMembers(t *testing.T) {
	names := []string{"a", "b"}
	for _, tc := range []struct {
		raw    string
		others bool
		want   string // the values of a and b, or "decoder" when Members leaves raw to it
	}{
		{`{"a":1,"b":"x"}`, false, `1 "x"`},
		{`{"b":[1,{"a":2}]}`, false, `<nil> [1,{"a":2}]`},
		{`{}`, false, `<nil> <nil>`},
		{`{"a":1,"c":2}`, false, "decoder"},     // another member, not allowed
		{`{"a":1,"c":2}`, true, `1 <nil>`},      // another member, allowed
		{`{"a":1,"B":2}`, true, "decoder"},      // the decoder would take B as b
		{`{"a":1,"\u00e9":2}`, true, "decoder"}, // escaped name
		{`{"a":1,"é":2}`, true, "decoder"},      // non-ASCII name: the decoder folds case
		{`{"a":1,"a":2}`, true, "decoder"},      // named twice: the decoder keeps the last
		{`{"a":1,}`, true, "decoder"},           // not JSON
		{`[{"a":1}]`, true, "decoder"},          // not an object
	} {
		v := make([][]byte, 2)
		got := "decoder"
		if Members([]byte(tc.raw), names, v, tc.others) {
			got = strings.TrimSpace(show(v[0]) + " " + show(v[1]))
		}
		if got != tc.want {
			t.Errorf("Members(%s, others=%v) = %s, want %s", tc.raw, tc.others, got, tc.want)
		}
	}
}

func show(v []byte) string {
	if v == nil {
		return "<nil>"
	}
	return string(v)
}
