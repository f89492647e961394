package ethereum

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ErrInvalidTypedData wraps every error of ParseTypedData and HashTypedData.
var ErrInvalidTypedData = errors.New("invalid EIP-712 typed data")

// Limits of an EIP-712 payload (docs/limits.md §4.1), checked before the work they bound. The
// largest real payloads measured against them: Seaport's bulk orders (five struct types, a
// tree of up to 24 array dimensions, 28 levels of nesting at height 24), Permit2's batch
// witness transfers, UniswapX orders and Hyperliquid's actions: at most a dozen types, a dozen
// fields a type and 2 KiB of encoded types.
const (
	// MaxTypedDataTypes is the most struct types a payload may declare in types (EIP712Domain
	// included).
	MaxTypedDataTypes = 128
	// MaxTypedDataFields is the most fields one struct type may have.
	MaxTypedDataFields = 256
	// MaxTypedDataDepth is the deepest a message may nest: each struct and each array level
	// counts one.
	MaxTypedDataDepth = 32
	// MaxTypedDataArrayDims is the most array suffixes one field type may carry ("T[2][]" has
	// two; a Seaport bulk order of height 24 has 24).
	MaxTypedDataArrayDims = 32
	// MaxTypedDataTypeBytes bounds the encoded types (EIP-712 encodeType: a struct type with
	// every type it reaches) hashed for one payload, summed over the struct types it hashes.
	// A type's encoding repeats every type it reaches, so cyclic or richly connected types
	// would otherwise cost the number of types times their total size.
	MaxTypedDataTypeBytes = 64 << 10
	// MaxTypedDataJSONDepth bounds the nesting of the payload's JSON, checked before it is
	// read: a value the message reads nests at most MaxTypedDataDepth levels below it, and
	// deeper nesting that nothing reads would only cost the readers' stacks.
	MaxTypedDataJSONDepth = MaxTypedDataDepth + 16
)

type typedField struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// domainFields is the EIP-712 order of the EIP712Domain fields, used to derive the domain
// type when the payload leaves it out (viem's serializeTypedData does).
var domainFields = []typedField{
	{"name", "string"}, {"version", "string"}, {"chainId", "uint256"},
	{"verifyingContract", "address"}, {"salt", "bytes32"},
}

// domainViewNames maps the EIP712Domain fields to their eth.eip_712.domain names.
var domainViewNames = map[string]string{
	"name": "name", "version": "version", "chainId": "chain_id",
	"verifyingContract": "verifying_contract", "salt": "salt",
}

// typeName is what viem and ethers hash as a struct type name: anything but the characters
// encodeType builds on ("Name(type field,...)", "T[]") and whitespace. EIP-712 asks for an
// identifier, but Hyperliquid signs "HyperliquidTransaction:ApproveAgent", and both libraries
// hash it as written.
var typeName = regexp.MustCompile(`^[^\s(),\[\]]+$`)

func typedErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidTypedData, fmt.Sprintf(format, a...))
}

// quote and cut show a name or value from the payload in an error, cut to 64 bytes: a refusal
// names what it refuses without echoing a hostile payload back whole.
func quote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "…"
	}
	return strconv.Quote(s)
}

func cut(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// kind is what a field's base type is.
type kind uint8

const (
	kindStruct kind = iota
	kindString
	kindBytes
	kindBool
	kindAddress
	kindBytesN
	kindInt
)

// fieldType is a field's type string parsed once: its base type and its array suffixes.
type fieldType struct {
	raw    string // as written: encodeType hashes it so
	dims   []int  // array lengths as written left to right (the last is the outermost); -1: dynamic
	kind   kind
	size   int  // bytesN: N; int: bits
	signed bool // int
	st     *structType
}

// structType is one declared struct type.
type structType struct {
	name   string
	fields []typedField
	types  []*fieldType
	index  map[string]int // field name → position, to find a member's field as it is read
	deps   []*structType  // the distinct struct types its fields name
	defLen int            // len("Name(type field,...)")
	hashed bool           // typeHash computed
	hash   [32]byte
	mark   int // the last dependency walk that reached it
}

// TypedData is a checked EIP-712 payload: ParseTypedData computes its digest, View its
// policy view, only when a policy needs it.
type TypedData struct {
	Digest      [32]byte
	primary     *structType
	domain      *structType
	primaryType string
	domainObjs  objects // the domain's JSON, in the payload
	messageObjs objects // the message's
}

// HashTypedData computes the EIP-712 digest of a payload and its eth.eip_712 policy view at
// once (ParseTypedData and View).
func HashTypedData(payload []byte) (digest [32]byte, view map[string]any, err error) {
	td, err := ParseTypedData(payload)
	if err != nil {
		return digest, nil, err
	}
	return td.Digest, td.View(), nil
}

// ParseTypedData checks a JSON typed-data payload as viem's serializeTypedData or ethers'
// TypedDataEncoder.getPayload produce it (with or without EIP712Domain in types; numbers as
// JSON numbers, decimal or 0x-hex strings) and computes its EIP-712 digest
// keccak256(0x19 0x01 ‖ domainSeparator ‖ hashStruct(message)), each struct type's type hash
// once. The domain and the message are hashed from the payload's bytes as they are read,
// without decoding them into Go values: the memory this takes does not grow with the payload
// (beyond a string value's unescaped copy and the decoded types), and its time is linear in
// it; the limits above bound the rest. The TypedData keeps the payload, which View reads
// again: the caller must not modify it.
func ParseTypedData(payload []byte) (*TypedData, error) {
	if jsonDepth(payload) > MaxTypedDataJSONDepth {
		return nil, typedErr("the JSON nests deeper than %d levels", MaxTypedDataJSONDepth)
	}
	var p typedPayload
	body, err := decodePayload(payload, &p)
	if err != nil {
		return nil, typedErr("%v", err)
	}
	if p.Types.n == 0 || p.PrimaryType == "" || p.Domain.n == 0 || p.Message.n == 0 {
		return nil, typedErr("types, primaryType, domain and message are required")
	}
	types, err := decodeTypes(objectsOf(body, "types", &p.Types))
	if err != nil {
		return nil, err
	}
	h := newHasher()
	td := &TypedData{
		primaryType: p.PrimaryType,
		domainObjs:  objectsOf(body, "domain", &p.Domain),
		messageObjs: objectsOf(body, "message", &p.Message),
	}
	structs, err := compileTypes(types, td.domainObjs, h)
	if err != nil {
		return nil, err
	}
	td.primary, td.domain = structs[p.PrimaryType], structs["EIP712Domain"]
	if td.primary == nil {
		return nil, typedErr("primaryType %s is not in types", quote(p.PrimaryType))
	}
	if td.Digest, err = h.digest(td, structs); err != nil {
		return nil, err
	}
	return td, nil
}

// jsonDepth is the deepest nesting of objects and arrays in b, read in one pass (strings
// skipped; malformed JSON is left to the decoder).
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// compileTypes checks the declared types against the limits and parses every field type once.
func compileTypes(types map[string][]typedField, domain objects, h *hasher) (map[string]*structType, error) {
	if _, ok := types["EIP712Domain"]; !ok {
		present := h.domainPresent(domain)
		var fields []typedField
		for i, f := range domainFields {
			if present[i] {
				fields = append(fields, f)
			}
		}
		types["EIP712Domain"] = fields
	}
	if len(types) > MaxTypedDataTypes {
		return nil, typedErr("types declares %d struct types, more than the %d allowed", len(types), MaxTypedDataTypes)
	}
	names := make([]string, 0, len(types))
	for name := range types {
		names = append(names, name)
	}
	sort.Strings(names) // the first error reported does not depend on map order
	structs := make(map[string]*structType, len(names))
	for _, name := range names {
		fields := types[name]
		if !typeName.MatchString(name) {
			return nil, typedErr("bad type name %s", quote(name))
		}
		if len(fields) > MaxTypedDataFields {
			return nil, typedErr(
				"type %s has %d fields, more than the %d allowed",
				cut(name),
				len(fields),
				MaxTypedDataFields,
			)
		}
		structs[name] = &structType{name: name, fields: fields}
	}
	parsed := map[string]*fieldType{}
	for _, name := range names {
		st := structs[name]
		st.index = make(map[string]int, len(st.fields))
		st.defLen = len(name) + 2
		for i, f := range st.fields {
			if _, seen := st.index[f.Name]; f.Name == "" || seen {
				return nil, typedErr("type %s: empty or repeated field name %s", quote(name), quote(f.Name))
			}
			st.index[f.Name] = i
			ft, ok := parsed[f.Type]
			if !ok {
				var err error
				if ft, err = parseFieldType(f.Type, structs); err != nil {
					return nil, typedErr("type %s field %s: %v", cut(name), cut(f.Name), err)
				}
				parsed[f.Type] = ft
			}
			st.types = append(st.types, ft)
			st.defLen += len(f.Type) + 1 + len(f.Name)
			if i > 0 {
				st.defLen++ // the comma
			}
			if ft.st != nil && !containsStruct(st.deps, ft.st) {
				st.deps = append(st.deps, ft.st)
			}
		}
	}
	return structs, nil
}

func containsStruct(list []*structType, st *structType) bool {
	for _, s := range list {
		if s == st {
			return true
		}
	}
	return false
}

// parseFieldType reads "base[n][]..." in one pass: a struct type (which wins over an atomic
// type of the same name, as in viem), an atomic type, or arrays of either.
func parseFieldType(t string, structs map[string]*structType) (*fieldType, error) {
	ft := &fieldType{raw: t}
	base := t
	if i := strings.IndexByte(t, '['); i >= 0 {
		base = t[:i]
		rest := t[i:]
		for rest != "" {
			end := strings.IndexByte(rest, ']')
			if rest[0] != '[' || end < 0 {
				return nil, fmt.Errorf("unknown type %s", quote(t))
			}
			digits := rest[1:end]
			n := -1
			if digits != "" {
				if !allDigits(digits) {
					return nil, fmt.Errorf("unknown type %s", quote(t))
				}
				var err error
				if n, err = strconv.Atoi(digits); err != nil {
					n = -2 // no array has that many elements: refused when a value meets it
				}
			}
			if len(ft.dims) == MaxTypedDataArrayDims {
				return nil, fmt.Errorf("type has more than %d array dimensions", MaxTypedDataArrayDims)
			}
			ft.dims = append(ft.dims, n)
			rest = rest[end+1:]
		}
	}
	if st, ok := structs[base]; ok {
		ft.kind, ft.st = kindStruct, st
		return ft, nil
	}
	switch base {
	case "address":
		ft.kind = kindAddress
		return ft, nil
	case "bool":
		ft.kind = kindBool
		return ft, nil
	case "string":
		ft.kind = kindString
		return ft, nil
	case "bytes":
		ft.kind = kindBytes
		return ft, nil
	}
	for _, prefix := range []string{"uint", "int"} {
		if digits, ok := strings.CutPrefix(base, prefix); ok && allDigits(digits) {
			bits, err := intBits(digits)
			if err != nil {
				return nil, err
			}
			ft.kind, ft.size, ft.signed = kindInt, bits, prefix == "int"
			return ft, nil
		}
	}
	if digits, ok := strings.CutPrefix(base, "bytes"); ok && digits != "" && allDigits(digits) {
		if n, err := strconv.Atoi(digits); err == nil && n >= 1 && n <= 32 {
			ft.kind, ft.size = kindBytesN, n
			return ft, nil
		}
	}
	return nil, fmt.Errorf("unknown type %s", quote(base))
}

func allDigits[S ~string | ~[]byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func intBits(s string) (int, error) {
	if s == "" {
		return 256, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 8 || n > 256 || n%8 != 0 {
		return 0, fmt.Errorf("bad integer size %s", quote(s))
	}
	return n, nil
}

// arrayTypeString is the type of a value with level dimensions left, as written.
func arrayTypeString(ft *fieldType, level int) string {
	t := ft.raw
	for i := len(ft.dims); i > level; i-- {
		t = t[:strings.LastIndexByte(t, '[')]
	}
	return t
}

func dimString(ft *fieldType, level int) string {
	t := arrayTypeString(ft, level)
	return t[strings.LastIndexByte(t, '[')+1 : len(t)-1]
}

func baseName(ft *fieldType) string {
	if i := strings.IndexByte(ft.raw, '['); i >= 0 {
		return ft.raw[:i]
	}
	return ft.raw
}

// View is the eth.eip_712 policy view: primary_type, domain{name, version, chain_id,
// verifying_contract, salt} (the fields present) and message, integers as *big.Int and hex
// values lowercase. It decodes the domain and the message into Go values, some 60 bytes of
// memory per byte of their JSON and 30 more for the view (docs/limits.md §4.1): a signing
// request pays it only when a policy reads eth.
func (td *TypedData) View() map[string]any {
	domain := map[string]any{}
	if dv, ok := structView(td.domain, decodeObjects(td.domainObjs)).(map[string]any); ok {
		for from, to := range domainViewNames {
			if v, ok := dv[from]; ok {
				domain[to] = v
			}
		}
	}
	msg := map[string]any{}
	if td.primary != td.domain {
		if mv, ok := structView(td.primary, decodeObjects(td.messageObjs)).(map[string]any); ok {
			msg = mv
		}
	}
	return map[string]any{"primary_type": td.primaryType, "domain": domain, "message": msg}
}

// decodeObjects decodes a member's objects into one map as encoding/json decoded the member
// (numbers as json.Number, an object named again merged into the first).
func decodeObjects(objs objects) map[string]any {
	var m map[string]any
	for o := range objs.all {
		dec := json.NewDecoder(bytes.NewReader(o))
		dec.UseNumber()
		_ = dec.Decode(&m) // ParseTypedData checked the JSON
	}
	return m
}

// structView and valueView render values ParseTypedData accepted (nil for anything else).
func structView(st *structType, v any) any {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	view := make(map[string]any, len(st.fields))
	for i, f := range st.fields {
		view[f.Name] = valueView(st.types[i], len(st.types[i].dims), obj[f.Name])
	}
	return view
}

func valueView(ft *fieldType, level int, v any) any {
	if level > 0 {
		items, _ := v.([]any)
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = valueView(ft, level-1, it)
		}
		return out
	}
	switch ft.kind {
	case kindStruct:
		return structView(ft.st, v)
	case kindString, kindBool:
		return v
	case kindBytes, kindAddress, kindBytesN:
		b, err := hexBytes(v)
		if err != nil {
			return nil
		}
		return "0x" + hex.EncodeToString(b)
	}
	x, err := parseInteger(v)
	if err != nil {
		return nil
	}
	return x
}
