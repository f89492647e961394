package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/wire"
)

// swaggerDefs reads the definitions of the public API's swagger files (the canonical one and
// the @turnkey/http superset).
func swaggerDefs(t *testing.T) map[string]map[string]any {
	t.Helper()
	defs := map[string]map[string]any{}
	for _, f := range []string{"../../spec/public_api.swagger.json", "../../spec/public_api.http-superset.swagger.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Definitions map[string]map[string]any `json:"definitions"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for k, v := range doc.Definitions {
			if _, seen := defs[k]; !seen {
				defs[k] = v
			}
		}
	}
	return defs
}

// minimal is a value of the schema with every required member filled: the first enum value
// that is not *_UNSPECIFIED, "x" for strings, 1 for numbers, one element for arrays.
func minimal(defs map[string]map[string]any, schema map[string]any, depth int) any {
	if ref, ok := schema["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/definitions/")
		if depth > 8 {
			return map[string]any{}
		}
		return minimal(defs, defs[name], depth+1)
	}
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		for _, v := range enum {
			if s, _ := v.(string); !strings.HasSuffix(s, "_UNSPECIFIED") {
				return s
			}
		}
		return enum[0]
	}
	switch schema["type"] {
	case "string":
		return "x"
	case "integer", "number":
		return 1
	case "boolean":
		return true
	case "array":
		items, _ := schema["items"].(map[string]any)
		return []any{minimal(defs, items, depth+1)}
	}
	out := map[string]any{}
	props, _ := schema["properties"].(map[string]any)
	req, _ := schema["required"].([]any)
	for _, r := range req {
		name := r.(string)
		p, _ := props[name].(map[string]any)
		out[name] = minimal(defs, p, depth+1)
	}
	return out
}

// Every activity type version of every submit path, and every query path, with a minimal valid
// body (every required member present, enums valid) reaches its handler and is answered without
// a 5xx other than 501 "not supported". Today's registry would have failed here for
// ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2 (its handler asserted the V1 intent and panicked); the
// typed registration now refuses to start with such a gap, and this test proves every version
// runs.
func TestEveryVersionWithAMinimalValidIntent(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Versions")
	defs := swaggerDefs(t)
	n := 0
	for _, op := range wire.Ops {
		switch op.Kind {
		case wire.Submit:
			for _, v := range op.Versions {
				typ := reflect.TypeOf(v.NewIntent()).Elem().Name()
				schema, ok := defs["v1"+typ]
				if !ok {
					t.Logf("%s: no swagger definition v1%s (a type newer than the stored swagger)", v.Type, typ)
					continue
				}
				params := minimal(defs, schema, 0)
				h.Advance(time.Millisecond)
				r := root.Submit(op.Path, v.Type, params)
				n++
				if r.Status >= 500 && r.Status != http.StatusNotImplemented {
					b, _ := json.Marshal(params)
					t.Errorf("%s %s: %d %s\nparameters: %s", op.Path, v.Type, r.Status, r.Raw, b)
				}
				if r.Status == http.StatusBadRequest && strings.Contains(string(r.Raw), "is required") &&
					!strings.Contains(string(r.Raw), "parameters.") {
					t.Errorf("%s %s: the minimal body misses an envelope member: %s", op.Path, v.Type, r.Raw)
				}
			}
		case wire.Query:
			typ := reflect.TypeOf(op.NewRequest()).Elem().Name()
			schema, ok := defs["v1"+typ]
			if !ok {
				t.Logf("%s: no swagger definition v1%s", op.Path, typ)
				continue
			}
			body, _ := minimal(defs, schema, 0).(map[string]any)
			if body == nil {
				body = map[string]any{}
			}
			body["organizationId"] = root.Org
			r := root.Query(op.Path, body)
			n++
			if r.Status >= 500 && r.Status != http.StatusNotImplemented {
				b, _ := json.Marshal(body)
				t.Errorf("query %s: %d %s\nbody: %s", op.Path, r.Status, r.Raw, b)
			}
		}
	}
	if n < 200 {
		t.Fatalf("only %d requests sent: the swagger was not walked", n)
	}
	t.Logf("%d requests sent", n)
}

// requiredStrings lists the required string members of schema (at any depth, through the
// first element of arrays, as minimal builds them): their path in the minimal body and their
// key in wire.EmptyRefused / wire.EmptyAccepted ("Type.member").
func requiredStrings(defs map[string]map[string]any, def string, path []any, depth int, out *[]struct {
	path []any
	key  string
}) {
	schema := defs[def]
	if schema == nil || depth > 8 {
		return
	}
	props, _ := schema["properties"].(map[string]any)
	req, _ := schema["required"].([]any)
	for _, r := range req {
		name := r.(string)
		p, _ := props[name].(map[string]any)
		here := append(append([]any{}, path...), name)
		if ref, ok := p["$ref"].(string); ok {
			sub := strings.TrimPrefix(ref, "#/definitions/")
			if _, enum := defs[sub]["enum"]; enum {
				*out = append(*out, struct {
					path []any
					key  string
				}{here, def + "." + name})
				continue
			}
			requiredStrings(defs, sub, here, depth+1, out)
			continue
		}
		switch p["type"] {
		case "string":
			*out = append(*out, struct {
				path []any
				key  string
			}{here, def + "." + name})
		case "array":
			items, _ := p["items"].(map[string]any)
			if ref, ok := items["$ref"].(string); ok {
				requiredStrings(defs, strings.TrimPrefix(ref, "#/definitions/"), append(here, 0), depth+1, out)
			}
		}
	}
}

func setAt(v any, path []any, val any) any {
	if len(path) == 0 {
		return val
	}
	switch c := v.(type) {
	case map[string]any:
		c[path[0].(string)] = setAt(c[path[0].(string)], path[1:], val)
	case []any:
		c[path[0].(int)] = setAt(c[path[0].(int)], path[1:], val)
	}
	return v
}

// Turnkey's API is proto3: "" cannot be told from absent, so "required" means "named", and
// Turnkey's own clients send "" (create_policy notes, set_organization_feature value,
// update_user_email userEmail to remove it). For every required string member of every activity
// type version in the swagger, "" is either accepted by validation (and the handler answers
// without a 5xx), or refused as required for the reason wire.EmptyRefused gives.
func TestEmptyRequiredStrings(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Empty")
	defs := swaggerDefs(t)
	accepted := map[string]bool{}
	for _, m := range wire.EmptyAccepted {
		accepted[m] = true
	}
	tried, refused, passed := 0, 0, 0
	for _, op := range wire.Ops {
		if op.Kind != wire.Submit {
			continue
		}
		for _, v := range op.Versions {
			def := "v1" + reflect.TypeOf(v.NewIntent()).Elem().Name()
			if _, ok := defs[def]; !ok {
				continue
			}
			var members []struct {
				path []any
				key  string
			}
			requiredStrings(defs, def, nil, 0, &members)
			for _, m := range members {
				member := m.path[len(m.path)-1].(string)
				params := setAt(minimal(defs, defs[def], 0), m.path, "")
				h.Advance(time.Millisecond)
				r := root.Submit(op.Path, v.Type, params)
				tried++
				missing := strings.Contains(r.Str("message"), "."+member+" is required")
				switch {
				case r.Status == http.StatusNotImplemented && strings.Contains(r.Str("message"), "/public/v1/submit/"):
					// The operation is not served: nothing is validated.
				case r.Status >= 500 && r.Status != http.StatusNotImplemented:
					t.Errorf("%s %s with %v empty: %d %s", op.Path, v.Type, m.path, r.Status, r.Raw)
				case wire.EmptyRefused[m.key] != "":
					refused++
					if r.Status != http.StatusBadRequest {
						t.Errorf(
							"%s %s: %v (%s) is refused when empty: %s, but answered %d %s",
							op.Path,
							v.Type,
							m.path,
							m.key,
							wire.EmptyRefused[m.key],
							r.Status,
							r.Raw,
						)
					}
				case accepted[m.key]:
					passed++
					if missing {
						t.Errorf(
							"%s %s: an empty %v (%s) is refused as missing: %s",
							op.Path,
							v.Type,
							m.path,
							m.key,
							r.Raw,
						)
					}
				default:
					t.Errorf(
						"%s %s: %v (%s) is in neither wire.EmptyRefused nor wire.EmptyAccepted",
						op.Path,
						v.Type,
						m.path,
						m.key,
					)
				}
			}
		}
	}
	if tried < 300 {
		t.Fatalf("only %d empty members tried", tried)
	}
	t.Logf("%d required string members sent empty: %d refused with their reason, %d accepted", tried, refused, passed)
}
