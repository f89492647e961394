package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// One Go type per definition, with its Validate method.

type gen struct {
	defs       map[string]*schema
	names      map[string]string // definition name -> Go type name
	collisions []string
	qual       string // qualifier of the validation helpers ("" or "wire.")
	// emptyRefused and emptyAccepted record the empty-string rule as applied (empty.go).
	emptyRefused  map[string]string
	emptyAccepted map[string]bool
}

func newGen(defs map[string]*schema, qual string, reserved []string) *gen {
	g := &gen{
		defs:          defs,
		names:         map[string]string{},
		qual:          qual,
		emptyRefused:  map[string]string{},
		emptyAccepted: map[string]bool{},
	}
	taken := map[string]string{}
	for _, r := range reserved {
		taken[r] = "(hand-written)"
	}
	for _, def := range sortedKeys(defs) {
		name := typeName(def)
		if other, ok := taken[name]; ok {
			n := 2
			for taken[name+strconv.Itoa(n)] != "" {
				n++
			}
			g.collisions = append(
				g.collisions,
				fmt.Sprintf("%s and %s both map to %s; %s becomes %s%d", other, def, name, def, name, n),
			)
			name += strconv.Itoa(n)
		}
		taken[name] = def
		g.names[def] = name
	}
	return g
}

// typeName drops a leading "v1" and upper-cases the first letter.
func typeName(def string) string {
	return upperFirst(strings.TrimPrefix(def, "v1"))
}

// fieldName upper-cases the first letter of a JSON name after dropping
// characters Go identifiers cannot hold ("@type" -> "Type").
func fieldName(jsonName string) string {
	name := strings.Map(func(r rune) rune {
		if r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return -1
	}, jsonName)
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		name = "X" + name
	}
	return upperFirst(name)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func isEnum(s *schema) bool   { return s.Type == "string" && len(s.Enum) > 0 }
func isMapDef(s *schema) bool { return len(s.AdditionalProperties) > 0 }

// goType is the Go type of a value of schema s.
func (g *gen) goType(s *schema, required bool) string {
	ptr := ""
	if !required {
		ptr = "*"
	}
	switch {
	case s.Ref != "":
		def := g.defs[refName(s.Ref)]
		if def == nil {
			log.Fatalf("unknown $ref %s", s.Ref)
		}
		if isEnum(def) || isMapDef(def) {
			return g.names[refName(s.Ref)]
		}
		return ptr + g.names[refName(s.Ref)]
	case s.Type == "string":
		return "string" // int64 and uint64 formats are strings on the wire too
	case s.Type == "integer" && s.Format == "int32":
		return ptr + "int32"
	case s.Type == "integer":
		return ptr + "int64"
	case s.Type == "number":
		return ptr + "float64"
	case s.Type == "boolean":
		return ptr + "bool"
	case s.Type == "array" && s.Items != nil:
		return "[]" + g.goType(s.Items, true)
	case s.Type == "object" && len(s.AdditionalProperties) > 0:
		return "map[string]" + g.goType(g.additional(s), true)
	}
	return "json.RawMessage" // an object with no properties, or no type at all
}

// additional is the schema of the values of an object with additionalProperties.
func (g *gen) additional(s *schema) *schema {
	v := new(schema)
	if err := json.Unmarshal(s.AdditionalProperties, v); err != nil {
		v = new(schema) // "additionalProperties": true
	}
	return v
}

func docLine(s *schema) string {
	text := s.Description
	if text == "" {
		text = s.Title
	}
	return strings.Join(strings.Fields(text), " ")
}

func (g *gen) typesFile(pkg, header string) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	if len(g.collisions) > 0 {
		b.WriteString("//\n// Type name collisions, resolved by a numeric suffix:\n")
		for _, c := range g.collisions {
			b.WriteString("//   - " + c + "\n")
		}
	}
	fmt.Fprintf(&b, "\npackage %s\n\n", pkg)
	var body bytes.Buffer
	defs := sortedKeys(g.defs)
	sort.Slice(defs, func(i, j int) bool { return g.names[defs[i]] < g.names[defs[j]] })
	for _, def := range defs {
		g.writeType(&body, def)
	}
	var imports []string
	if bytes.Contains(body.Bytes(), []byte("json.")) {
		imports = append(imports, `"encoding/json"`)
	}
	if bytes.Contains(body.Bytes(), []byte("slices.")) {
		imports = append(imports, `"slices"`)
	}
	if g.qual != "" {
		imports = append(imports, `"github.com/latchkey/latchkey/internal/wire"`)
	}
	if len(imports) > 0 {
		fmt.Fprintf(&b, "import (\n%s\n)\n\n", strings.Join(imports, "\n"))
	}
	b.Write(body.Bytes())
	if g.qual == "" {
		g.writeEmptyTables(&b)
	}
	return b.Bytes()
}

// writeEmptyTables records the empty-string rule as applied: the required string members that
// refuse "" (and why) and those that accept it, for the test over the whole swagger.
func (g *gen) writeEmptyTables(b *bytes.Buffer) {
	b.WriteString(
		"// EmptyRefused are the required string members (definition.member) whose Validate refuses \"\", with\n",
	)
	b.WriteString("// the reason (gen/empty.go); every other required string member accepts \"\" (EmptyAccepted).\n")
	b.WriteString("var EmptyRefused = map[string]string{\n")
	for _, m := range sortedKeys(g.emptyRefused) {
		fmt.Fprintf(b, "\t%q: %q,\n", m, g.emptyRefused[m])
	}
	b.WriteString("}\n\n// EmptyAccepted are the required string members whose Validate accepts \"\".\n")
	b.WriteString("var EmptyAccepted = []string{\n")
	for _, m := range sortedKeys(g.emptyAccepted) {
		fmt.Fprintf(b, "\t%q,\n", m)
	}
	b.WriteString("}\n")
}

func (g *gen) writeType(b *bytes.Buffer, def string) {
	s, name := g.defs[def], g.names[def]
	fmt.Fprintf(b, "// %s is the swagger definition %s.\n", name, def)
	if doc := docLine(s); doc != "" {
		fmt.Fprintf(b, "// %s\n", doc)
	}
	switch {
	case isEnum(s):
		fmt.Fprintf(b, "type %s string\n\n", name)
		fmt.Fprintf(b, "// %sValues lists every value of %s, in swagger order.\n", name, name)
		fmt.Fprintf(b, "var %sValues = []string{\n", name)
		for _, v := range s.Enum {
			fmt.Fprintf(b, "\t%q,\n", v)
		}
		b.WriteString("}\n\n")
		fmt.Fprintf(b, "// Valid reports whether x is one of %sValues.\n", name)
		fmt.Fprintf(b, "func (x %s) Valid() bool { return slices.Contains(%sValues, string(x)) }\n\n", name, name)
	case isMapDef(s):
		// Its named properties (e.g. protobufAny's "@type") are kept in the map.
		fmt.Fprintf(b, "// It keeps every member, named ones included, as raw JSON.\n")
		fmt.Fprintf(
			b,
			"type %s %s\n\n",
			name,
			g.goType(&schema{Type: "object", AdditionalProperties: s.AdditionalProperties}, true),
		)
		fmt.Fprintf(b, "// Validate checks nothing: %s has no fixed shape.\n", name)
		fmt.Fprintf(b, "func (x %s) Validate(path string) error { return nil }\n\n", name)
	default:
		g.writeStruct(b, def, name, s)
	}
}

func (g *gen) writeStruct(b *bytes.Buffer, def, name string, s *schema) {
	var checks bytes.Buffer
	var vars bytes.Buffer
	fmt.Fprintf(b, "type %s struct {\n", name)
	used := map[string]bool{}
	for _, p := range s.Properties {
		required := slices.Contains(s.Required, p.name)
		field := fieldName(p.name)
		for used[field] {
			field += "_"
		}
		used[field] = true
		if doc := docLine(p.schema); doc != "" {
			fmt.Fprintf(b, "\t// %s\n", doc)
		}
		tag := p.name
		if !required {
			tag += ",omitempty"
		}
		fmt.Fprintf(b, "\t%s %s `json:%q`\n", field, g.goType(p.schema, required), tag)

		values := ""
		if isEnum(p.schema) {
			values = lowerFirst(name) + field + "Values"
			fmt.Fprintf(&vars, "var %s = []string{%s}\n", values, quoteAll(p.schema.Enum))
		}
		pathExpr := fmt.Sprintf("%sFieldPath(path, %q)", g.qual, p.name)
		checks.WriteString(g.check(p.schema, required, "x."+field, pathExpr, values, def+"."+p.name))
	}
	b.WriteString("}\n\n")
	b.Write(vars.Bytes())
	if vars.Len() > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(
		b,
		"// Validate returns the first required field that is missing or enum value\n// that is not listed, as a *%sFieldError naming it under path.\n",
		g.qual,
	)
	if checks.Len() == 0 {
		fmt.Fprintf(b, "func (x *%s) Validate(path string) error { return nil }\n\n", name)
		return
	}
	fmt.Fprintf(b, "func (x *%s) Validate(path string) error {\n%s\treturn nil\n}\n\n", name, checks.String())
}

// check returns the statements that validate expr, a value of schema s
// named by the Go expression pathExpr. values names the list of an inline
// enum, if s is one.
func (g *gen) check(s *schema, required bool, expr, pathExpr, values, member string) string {
	q := g.qual
	missing := fmt.Sprintf("\treturn %sRequired(%s)\n", q, pathExpr)
	switch {
	case s.Ref != "":
		def := g.defs[refName(s.Ref)]
		switch {
		case isEnum(def):
			invalid := fmt.Sprintf("\treturn %sInvalidValue(%s, string(%s))\n", q, pathExpr, expr)
			if required {
				g.emptyRefused[member] = "an enum: the empty string is not one of its values"
				return fmt.Sprintf("if %s == \"\" {\n%s}\nif !%s.Valid() {\n%s}\n", expr, missing, expr, invalid)
			}
			return fmt.Sprintf("if %s != \"\" && !%s.Valid() {\n%s}\n", expr, expr, invalid)
		case isMapDef(def):
			return ""
		case required:
			return fmt.Sprintf("if err := %s.Validate(%s); err != nil {\n\treturn err\n}\n", expr, pathExpr)
		default:
			return fmt.Sprintf(
				"if %s != nil {\n\tif err := %s.Validate(%s); err != nil {\n\t\treturn err\n\t}\n}\n",
				expr,
				expr,
				pathExpr,
			)
		}
	case s.Type == "string" && values != "":
		invalid := fmt.Sprintf("\treturn %sInvalidValue(%s, %s)\n", q, pathExpr, expr)
		if required {
			g.emptyRefused[member] = "an enum: the empty string is not one of its values"
			return fmt.Sprintf(
				"if %s == \"\" {\n%s}\nif !slices.Contains(%s, %s) {\n%s}\n",
				expr,
				missing,
				values,
				expr,
				invalid,
			)
		}
		return fmt.Sprintf("if %s != \"\" && !slices.Contains(%s, %s) {\n%s}\n", expr, values, expr, invalid)
	case s.Type == "string" && required:
		_, field, _ := strings.Cut(member, ".")
		why := emptyRefused(field)
		if why == "" {
			g.emptyAccepted[member] = true
			return "" // present is enough: the handler decides what "" means (empty.go)
		}
		g.emptyRefused[member] = why
		return fmt.Sprintf("if %s == \"\" {\n%s}\n", expr, missing)
	case s.Type == "array" && s.Items != nil:
		var out string
		if required {
			out = fmt.Sprintf("if %s == nil {\n%s}\n", expr, missing)
		}
		elem := g.elemCheck(s.Items, expr+"[i]", fmt.Sprintf("%sIndexPath(%s, i)", q, pathExpr))
		if elem != "" {
			out += fmt.Sprintf("for i := range %s {\n%s}\n", expr, elem)
		}
		return out
	case s.Type == "object" && len(s.AdditionalProperties) > 0 && required:
		return fmt.Sprintf("if %s == nil {\n%s}\n", expr, missing)
	}
	return "" // numbers and bools cannot be checked for presence
}

// elemCheck validates one element of an array: structs recurse and enum
// values must be listed (an empty element is an invalid value).
func (g *gen) elemCheck(s *schema, expr, pathExpr string) string {
	if s.Ref == "" {
		return ""
	}
	def := g.defs[refName(s.Ref)]
	switch {
	case isEnum(def):
		return fmt.Sprintf(
			"if !%s.Valid() {\n\treturn %sInvalidValue(%s, string(%s))\n}\n",
			expr,
			g.qual,
			pathExpr,
			expr,
		)
	case isMapDef(def):
		return ""
	}
	return fmt.Sprintf("if err := %s.Validate(%s); err != nil {\n\treturn err\n}\n", expr, pathExpr)
}

func quoteAll(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
