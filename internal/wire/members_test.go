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
