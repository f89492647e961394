package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/latchkey/latchkey/internal/costtest"
)

// FuzzDecodeValidate feeds arbitrary bytes to the decoder and Validate of a
// few request types, and of every version of one submit path: no panic.
func FuzzDecodeValidate(f *testing.F) {
	f.Add([]byte(subOrgV8))
	f.Add([]byte(`{"type":"ACTIVITY_TYPE_CREATE_USERS_V4","parameters":{"users":[{"userName":""}]}}`))
	f.Add([]byte(`{"parameters":{"rootUsers":[null,{}],"wallet":{"accounts":[{"curve":"X"}]}}}`))
	f.Add([]byte(`{"organizationId":"o","activityId":"a"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))
	// What a probe got stored: control characters in names, invalid UTF-8, duplicate members.
	f.Add([]byte("{\"parameters\":{\"sessionProfileName\":\"a\\u0000b\\u0007\",\"notes\":\"x\\ny\"}}"))
	f.Add([]byte("{\"parameters\":{\"subOrganizationName\":\"caf\xe9\"}}"))
	f.Add(
		[]byte(
			`{"organizationId":"a","organizationId":"b","parameters":{"rootUsers":[{"userName":"x","userName":"y"}]}}`,
		),
	)
	f.Add([]byte(`{"parameters":{"subOrganizationName":"\ud800\u0041"}}`))
	newTypes := []func() Validator{
		func() Validator { return new(CreateSubOrganizationRequest) },
		func() Validator { return new(CreateUsersRequest) },
		func() Validator { return new(SignRawPayloadRequest) },
		func() Validator { return new(GetActivityRequest) },
		func() Validator { return new(Activity) },
		func() Validator { return new(SubmitEnvelope) },
	}
	op, _ := Lookup(Submit, "create_sub_organization")
	for _, v := range op.Versions {
		newTypes = append(newTypes, v.NewIntent)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The request path: the strict pass over the raw body, then the decoder, Validate and
		// the free-text checks. What the strict pass accepts decodes to the same strings it
		// was sent as (valid UTF-8, one value per member).
		var strict bool
		// Its cost is bounded by the body's size (docs/limits.md §2).
		costtest.Budget(t, data, 32, 64<<10, func() { strict = CheckJSON(data) == nil })
		if strict && json.Valid(data) {
			var doc any
			if err := json.Unmarshal(data, &doc); err == nil {
				if bad := replaced(doc); bad != "" && !bytes.Contains(data, []byte("\xef\xbf\xbd")) &&
					!bytes.Contains(bytes.ToLower(data), []byte(`\ufffd`)) {
					t.Fatalf("CheckJSON accepted a body whose decoding changed a string: %q", bad)
				}
			}
			if n := members(t, data); n != countMembers(doc) {
				t.Fatalf("CheckJSON accepted %d members that decode to %d (a duplicate)", n, countMembers(doc))
			}
		}
		for _, newType := range newTypes {
			v := newType()
			if json.Unmarshal(data, v) != nil {
				continue
			}
			if err := v.Validate("parameters"); err != nil {
				if _, ok := err.(*FieldError); !ok {
					t.Fatalf("%T.Validate returned %T", v, err)
				}
			}
			err := CheckText(v, "parameters")
			if err != nil {
				if _, ok := err.(*FieldError); !ok {
					t.Fatalf("CheckText returned %T", err)
				}
			}
			if want := checkTextEager(reflect.ValueOf(v), "parameters", ""); fmt.Sprint(err) != fmt.Sprint(want) {
				t.Fatalf("CheckText = %v, the eager walk's %v", err, want)
			}
		}
	})
}

// replaced returns a decoded string holding U+FFFD (what the decoder puts for invalid UTF-8).
func replaced(v any) string {
	switch v := v.(type) {
	case string:
		if strings.ContainsRune(v, utf8.RuneError) {
			return v
		}
	case []any:
		for _, e := range v {
			if s := replaced(e); s != "" {
				return s
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, utf8.RuneError) {
				return k
			}
			if s := replaced(e); s != "" {
				return s
			}
		}
	}
	return ""
}

// members counts the object members of a JSON text, token by token (keys as written, so a
// duplicate counts twice).
func members(t *testing.T, data []byte) int {
	type frame struct{ object, expectKey bool }
	dec := json.NewDecoder(bytes.NewReader(data))
	n := 0
	var stack []frame
	valueDone := func() {
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].expectKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		if len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].expectKey {
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
				valueDone()
				continue
			}
			n++
			stack[len(stack)-1].expectKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{object: true, expectKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

func countMembers(v any) int {
	switch v := v.(type) {
	case []any:
		n := 0
		for _, e := range v {
			n += countMembers(e)
		}
		return n
	case map[string]any:
		n := len(v)
		for _, e := range v {
			n += countMembers(e)
		}
		return n
	}
	return 0
}

// checkTextEager is CheckText as it was written first, building each field's path on the way
// down: the reference the lazy walk is held to.
func checkTextEager(v reflect.Value, path, member string) *FieldError {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return checkTextEager(v.Elem(), path, member)
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if fe := checkTextEager(v.Field(i), FieldPath(path, name), name); fe != nil {
				return fe
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil
		}
		for i := 0; i < v.Len(); i++ {
			if fe := checkTextEager(v.Index(i), path+"["+strconv.Itoa(i)+"]", member); fe != nil {
				return fe
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if fe := checkTextEager(iter.Value(), FieldPath(path, iter.Key().String()), member); fe != nil {
				return fe
			}
		}
	case reflect.String:
		rule, ok := textRuleOf(member)
		if !ok {
			return nil
		}
		return rule.check(path, v.String())
	}
	return nil
}
