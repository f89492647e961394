package activity

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/latchkey/latchkey/internal/wire"
)

// maxPlainFields is how many fields an intent may have for plainIntent to read it.
const maxPlainFields = 8

// stringFields is how plainIntent reads an intent type: its fields' JSON names and indexes, when
// every field is an exported string (or string-kinded enum) named by a plain json tag; nil names
// when the type is not one it reads.
type stringFields struct {
	names []string
	index []int
}

var intentPlans sync.Map // reflect.Type (of the struct) -> *stringFields

// plainIntent reads params into intent (a pointer to a struct) as json.Unmarshal would, without
// its reflection over the bytes, when intent's fields are all strings and params is as the SDKs
// send it: a valid JSON object naming only those fields, each once, exactly as tagged, with
// string values without escapes. ok is false for anything else, leaving intent untouched and
// the caller to json.Unmarshal. A signing request's intent (sign_raw_payload) is such a one, and
// so is a query's body that names only strings (whoami's organizationId).
func plainIntent(params []byte, intent any) (ok bool) {
	rv := reflect.ValueOf(intent)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return false
	}
	plan := planFor(rv.Elem().Type())
	if plan.names == nil {
		return false
	}
	var v [maxPlainFields][]byte
	values := v[:len(plan.names)]
	if !wire.Members(params, plan.names, values, false) {
		return false
	}
	var s [maxPlainFields]string
	for i, raw := range values {
		if raw == nil {
			continue
		}
		if s[i], ok = wire.PlainString(raw); !ok {
			return false
		}
	}
	st := rv.Elem()
	for i, raw := range values {
		if raw != nil {
			st.Field(plan.index[i]).SetString(s[i])
		}
	}
	return true
}

func planFor(t reflect.Type) *stringFields {
	if p, ok := intentPlans.Load(t); ok {
		return p.(*stringFields)
	}
	p := &stringFields{}
	if t.NumField() <= maxPlainFields {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || f.Anonymous || f.Type.Kind() != reflect.String || !plainName(name) ||
				(opts != "" && opts != "omitempty") || decodesItself(f.Type) {
				p = &stringFields{}
				break
			}
			p.names = append(p.names, name)
			p.index = append(p.index, i)
		}
	}
	if len(p.names) == 0 {
		p.names = nil
	}
	intentPlans.Store(t, p)
	return p
}

// plainName reports whether a json tag's name is one encoding/json uses as it is: ASCII letters,
// digits and underscores.
func plainName(name string) bool {
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return name != ""
}

// decodesItself reports whether encoding/json would hand a value of t to its own decoder.
func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, i := range []reflect.Type{
		reflect.TypeFor[json.Unmarshaler](), reflect.TypeFor[encoding.TextUnmarshaler](),
	} {
		if t.Implements(i) || pt.Implements(i) {
			return true
		}
	}
	return false
}
