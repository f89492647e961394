package wire

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Bounds of free-text request fields (docs/compatibility.md, "Validation"). Names follow the
// directory's name rule (256 bytes); notes and values are longer text; an e-mail address is
// bounded by RFC 5321, whose path (the address in angle brackets) is at most 256 octets, so no
// mail server takes a longer address. Fields not listed here (ids, keys, payloads,
// transactions, tokens, bundles, policy conditions) carry data whose own parser checks it,
// bounded by the body limit.
const (
	MaxNameBytes  = 256
	MaxTextBytes  = 8192
	MaxEmailBytes = 254
)

// textRule is what a free-text field may hold.
type textRule struct {
	max       int
	multiLine bool // \n, \r and \t are allowed (notes)
}

// textRuleOf classifies a field by its JSON member name; ok is false for fields that are not
// free text.
func textRuleOf(member string) (textRule, bool) {
	switch {
	case member == "notes", strings.HasSuffix(member, "Notes"), member == "description":
		return textRule{max: MaxTextBytes, multiLine: true}, true
	case member == "value":
		return textRule{max: MaxTextBytes}, true
	case member == "name", strings.HasSuffix(member, "Name"):
		return textRule{max: MaxNameBytes}, true
	case member == "userEmail",
		member == "email",
		strings.HasSuffix(member, "EmailAddress"),
		member == "receiverUserEmail":
		return textRule{max: MaxEmailBytes}, true
	}
	return textRule{}, false
}

// CheckText walks a decoded request (a pointer to a wire type) and refuses, naming the field, a
// free-text field (names, notes, values, e-mail addresses) that is too long or holds a NUL or
// another control character (notes may hold line breaks and tabs). Such values would be stored
// and shown to operators and other users as given.
func CheckText(v any, path string) error {
	if fe := checkText(reflect.ValueOf(v), ""); fe != nil {
		// fe.Field holds the steps down from v (".member", "[i]"), as FieldPath and IndexPath
		// would have joined them.
		if path == "" {
			fe.Field = strings.TrimPrefix(fe.Field, ".")
		} else {
			fe.Field = path + fe.Field
		}
		return fe
	}
	return nil
}

// checkText returns the refusal of the first bad free-text field under v, its Field the steps
// from v down to that field, built only when a field is refused.
func checkText(v reflect.Value, member string) *FieldError {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return checkText(v.Elem(), member)
	case reflect.Struct:
		for i, name := range memberNames(v.Type()) {
			if name == "" {
				continue
			}
			if fe := checkText(v.Field(i), name); fe != nil {
				fe.Field = "." + name + fe.Field
				return fe
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil
		}
		for i := 0; i < v.Len(); i++ {
			if fe := checkText(v.Index(i), member); fe != nil {
				fe.Field = "[" + strconv.Itoa(i) + "]" + fe.Field
				return fe
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if fe := checkText(iter.Value(), member); fe != nil {
				fe.Field = "." + iter.Key().String() + fe.Field
				return fe
			}
		}
	case reflect.String:
		rule, ok := textRuleOf(member)
		if !ok {
			return nil
		}
		return rule.check("", v.String())
	}
	return nil
}

// memberNames are the JSON member names of a struct type's fields, by field index ("" for a field
// that is not exported or not encoded), worked out once per type.
func memberNames(t reflect.Type) []string {
	if names, ok := structNames.Load(t); ok {
		return names.([]string)
	}
	names := make([]string, t.NumField())
	for i := range names {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names[i] = name
	}
	structNames.Store(t, names)
	return names
}

var structNames sync.Map // reflect.Type -> []string

func (r textRule) check(path, s string) *FieldError {
	if len(s) > r.max {
		return Refused(path, "must be at most "+strconv.Itoa(r.max)+" bytes")
	}
	if !utf8.ValidString(s) {
		return Refused(path, "must be valid UTF-8")
	}
	for _, c := range s {
		if c == 0 {
			return Refused(path, "must not contain NUL characters")
		}
		if (c < 0x20 || c == 0x7f) && !(r.multiLine && (c == '\n' || c == '\r' || c == '\t')) {
			return Refused(path, "must not contain control characters")
		}
	}
	return nil
}
