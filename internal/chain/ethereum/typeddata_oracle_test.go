package ethereum

// This file is the EIP-712 implementation as it was before the digest read the payload's
// bytes in place (typeddata.go at 7444c2a, its identifiers prefixed with "old", less two
// functions nothing calls). It is the oracle typeddata_diff_test.go compares ParseTypedData
// with: the same digest and view for every payload it accepted, the same refusal for every
// payload it refused.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/crypto"
)

type oldTypedField struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// typedPayload is the JSON of a payload as viem's serializeTypedData and ethers'
// TypedDataEncoder.getPayload write it.
type oldTypedPayload struct {
	Types       map[string][]oldTypedField `json:"types"`
	PrimaryType string                     `json:"primaryType"`
	Domain      map[string]any             `json:"domain"`
	Message     map[string]any             `json:"message"`
}

// domainFields is the EIP-712 order of the EIP712Domain fields, used to derive the domain
// type when the payload leaves it out (viem's serializeTypedData does).
var oldDomainFields = []oldTypedField{
	{"name", "string"}, {"version", "string"}, {"chainId", "uint256"},
	{"verifyingContract", "address"}, {"salt", "bytes32"},
}

// domainViewNames maps the EIP712Domain fields to their eth.eip_712.domain names.
var oldDomainViewNames = map[string]string{
	"name": "name", "version": "version", "chainId": "chain_id",
	"verifyingContract": "verifying_contract", "salt": "salt",
}

// typeName is what viem and ethers hash as a struct type name: anything but the characters
// encodeType builds on ("Name(type field,...)", "T[]") and whitespace. EIP-712 asks for an
// identifier, but Hyperliquid signs "HyperliquidTransaction:ApproveAgent", and both libraries
// hash it as written.
var oldTypeName = regexp.MustCompile(`^[^\s(),\[\]]+$`)

func oldTypedErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidTypedData, fmt.Sprintf(format, a...))
}

// quote and cut show a name or value from the payload in an error, cut to 64 bytes: a refusal
// names what it refuses without echoing a hostile payload back whole.
func oldQuote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "…"
	}
	return strconv.Quote(s)
}

func oldCut(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// kind is what a field's base type is.
type oldKind uint8

const (
	oldKindStruct oldKind = iota
	oldKindString
	oldKindBytes
	oldKindBool
	oldKindAddress
	oldKindBytesN
	oldKindInt
)

// fieldType is a field's type string parsed once: its base type and its array suffixes.
type oldFieldType struct {
	raw     string // as written: encodeType hashes it so
	dims    []int  // array lengths as written left to right (the last is the outermost); -1: dynamic
	oldKind oldKind
	size    int  // bytesN: N; int: bits
	signed  bool // int
	st      *oldStructType
}

// structType is one declared struct type.
type oldStructType struct {
	name   string
	fields []oldTypedField
	types  []*oldFieldType
	deps   []*oldStructType // the distinct struct types its fields name
	defLen int              // len("Name(type field,...)")
	hashed bool             // typeHash computed
	hash   [32]byte
	mark   int // the last dependency walk that reached it
}

// TypedData is a checked EIP-712 payload: ParseTypedData computes its digest, View its
// policy view, only when a policy needs it.
type oldTypedData struct {
	Digest  [32]byte
	primary *oldStructType
	domain  *oldStructType
	p       oldTypedPayload
}

// ParseTypedData checks a JSON typed-data payload as viem's serializeTypedData or ethers'
// TypedDataEncoder.getPayload produce it (with or without EIP712Domain in types; numbers as
// JSON numbers, decimal or 0x-hex strings) and computes its EIP-712 digest
// keccak256(0x19 0x01 ‖ domainSeparator ‖ hashStruct(message)), each struct type's type hash
// once. Its cost is linear in the payload: the limits above bound what is not.
func oldParseTypedData(payload []byte) (*oldTypedData, error) {
	if oldJsonDepth(payload) > MaxTypedDataJSONDepth {
		return nil, oldTypedErr("the JSON nests deeper than %d levels", MaxTypedDataJSONDepth)
	}
	var p oldTypedPayload
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return nil, oldTypedErr("%v", err)
	}
	if dec.More() {
		return nil, oldTypedErr("trailing data after the JSON object")
	}
	if p.Types == nil || p.PrimaryType == "" || p.Domain == nil || p.Message == nil {
		return nil, oldTypedErr("types, primaryType, domain and message are required")
	}
	structs, err := oldCompileTypes(&p)
	if err != nil {
		return nil, err
	}
	td := &oldTypedData{primary: structs[p.PrimaryType], domain: structs["EIP712Domain"], p: p}
	if td.primary == nil {
		return nil, oldTypedErr("primaryType %s is not in types", oldQuote(p.PrimaryType))
	}
	h := oldNewHasher()
	domainHash, verr := h.hashStruct(td.domain, p.Domain, 0)
	if verr != nil {
		return nil, verr.at("domain")
	}
	buf := make([]byte, 0, 66)
	buf = append(buf, 0x19, 0x01)
	buf = append(buf, domainHash[:]...)
	if td.primary != td.domain {
		msgHash, verr := h.hashStruct(td.primary, p.Message, 0)
		if verr != nil {
			return nil, verr.at("message")
		}
		buf = append(buf, msgHash[:]...)
	}
	td.Digest = h.sum(0, buf)
	return td, nil
}

// jsonDepth is the deepest nesting of objects and arrays in b, read in one pass (strings
// skipped; malformed JSON is left to the decoder).
func oldJsonDepth(b []byte) int {
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
func oldCompileTypes(p *oldTypedPayload) (map[string]*oldStructType, error) {
	if _, ok := p.Types["EIP712Domain"]; !ok {
		var fields []oldTypedField
		for _, f := range oldDomainFields {
			if v, ok := p.Domain[f.Name]; ok && v != nil {
				fields = append(fields, f)
			}
		}
		p.Types["EIP712Domain"] = fields
	}
	if len(p.Types) > MaxTypedDataTypes {
		return nil, oldTypedErr(
			"types declares %d struct types, more than the %d allowed",
			len(p.Types),
			MaxTypedDataTypes,
		)
	}
	names := make([]string, 0, len(p.Types))
	for name := range p.Types {
		names = append(names, name)
	}
	sort.Strings(names) // the first error reported does not depend on map order
	structs := make(map[string]*oldStructType, len(names))
	for _, name := range names {
		fields := p.Types[name]
		if !oldTypeName.MatchString(name) {
			return nil, oldTypedErr("bad type name %s", oldQuote(name))
		}
		if len(fields) > MaxTypedDataFields {
			return nil, oldTypedErr(
				"type %s has %d fields, more than the %d allowed",
				oldCut(name),
				len(fields),
				MaxTypedDataFields,
			)
		}
		structs[name] = &oldStructType{name: name, fields: fields}
	}
	parsed := map[string]*oldFieldType{}
	seen := map[string]bool{}
	for _, name := range names {
		st := structs[name]
		clear(seen)
		st.defLen = len(name) + 2
		for i, f := range st.fields {
			if f.Name == "" || seen[f.Name] {
				return nil, oldTypedErr("type %s: empty or repeated field name %s", oldQuote(name), oldQuote(f.Name))
			}
			seen[f.Name] = true
			ft, ok := parsed[f.Type]
			if !ok {
				var err error
				if ft, err = oldParseFieldType(f.Type, structs); err != nil {
					return nil, oldTypedErr("type %s field %s: %v", oldCut(name), oldCut(f.Name), err)
				}
				parsed[f.Type] = ft
			}
			st.types = append(st.types, ft)
			st.defLen += len(f.Type) + 1 + len(f.Name)
			if i > 0 {
				st.defLen++ // the comma
			}
			if ft.st != nil && !oldContainsStruct(st.deps, ft.st) {
				st.deps = append(st.deps, ft.st)
			}
		}
	}
	return structs, nil
}

func oldContainsStruct(list []*oldStructType, st *oldStructType) bool {
	for _, s := range list {
		if s == st {
			return true
		}
	}
	return false
}

// parseFieldType reads "base[n][]..." in one pass: a struct type (which wins over an atomic
// type of the same name, as in viem), an atomic type, or arrays of either.
func oldParseFieldType(t string, structs map[string]*oldStructType) (*oldFieldType, error) {
	ft := &oldFieldType{raw: t}
	base := t
	if i := strings.IndexByte(t, '['); i >= 0 {
		base = t[:i]
		rest := t[i:]
		for rest != "" {
			end := strings.IndexByte(rest, ']')
			if rest[0] != '[' || end < 0 {
				return nil, fmt.Errorf("unknown type %s", oldQuote(t))
			}
			digits := rest[1:end]
			n := -1
			if digits != "" {
				if !oldAllDigits(digits) {
					return nil, fmt.Errorf("unknown type %s", oldQuote(t))
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
		ft.oldKind, ft.st = oldKindStruct, st
		return ft, nil
	}
	switch base {
	case "address":
		ft.oldKind = oldKindAddress
		return ft, nil
	case "bool":
		ft.oldKind = oldKindBool
		return ft, nil
	case "string":
		ft.oldKind = oldKindString
		return ft, nil
	case "bytes":
		ft.oldKind = oldKindBytes
		return ft, nil
	}
	for _, prefix := range []string{"uint", "int"} {
		if digits, ok := strings.CutPrefix(base, prefix); ok && oldAllDigits(digits) {
			bits, err := oldIntBits(digits)
			if err != nil {
				return nil, err
			}
			ft.oldKind, ft.size, ft.signed = oldKindInt, bits, prefix == "int"
			return ft, nil
		}
	}
	if digits, ok := strings.CutPrefix(base, "bytes"); ok && digits != "" && oldAllDigits(digits) {
		if n, err := strconv.Atoi(digits); err == nil && n >= 1 && n <= 32 {
			ft.oldKind, ft.size = oldKindBytesN, n
			return ft, nil
		}
	}
	return nil, fmt.Errorf("unknown type %s", oldQuote(base))
}

func oldAllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func oldIntBits(s string) (int, error) {
	if s == "" {
		return 256, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 8 || n > 256 || n%8 != 0 {
		return 0, fmt.Errorf("bad integer size %s", oldQuote(s))
	}
	return n, nil
}

// valueError is an error in the message or the domain, with the path to the value built only
// when there is an error (segments innermost first).
type oldValueError struct {
	rev []string
	msg string
}

func oldValueErr(format string, a ...any) *oldValueError {
	return &oldValueError{msg: fmt.Sprintf(format, a...)}
}

func (e *oldValueError) in(segment string) *oldValueError {
	e.rev = append(e.rev, segment)
	return e
}

// at completes the path under root and returns the error.
func (e *oldValueError) at(root string) error {
	var b strings.Builder
	b.WriteString(root)
	for i := len(e.rev) - 1; i >= 0; i-- {
		b.WriteString(e.rev[i])
	}
	return oldTypedErr("%s: %s", b.String(), e.msg)
}

func oldFieldSeg(name string) string { return "." + oldCut(name) }
func oldIndexSeg(i int) string       { return "[" + strconv.Itoa(i) + "]" }

// hasher encodes one payload's values without allocating per value: a struct or an array at
// depth d streams its members' words into the Keccak state of depth d (its members, one level
// deeper, use the states beyond), and one integer and one byte buffer serve every leaf.
type oldHasher struct {
	states    []crypto.KeccakState // by depth, made on first use (at most MaxTypedDataDepth+2)
	types     crypto.KeccakState   // for type hashes
	buf       []byte
	word      [32]byte
	n         big.Int
	walk      int // dependency walks so far (structType.mark)
	typeBytes int // encoded type bytes hashed so far (MaxTypedDataTypeBytes)
	reach     []*oldStructType
}

func oldNewHasher() *oldHasher { return &oldHasher{} }

// state returns the reset Keccak state of depth d.
func (h *oldHasher) state(d int) crypto.KeccakState {
	for len(h.states) <= d {
		h.states = append(h.states, crypto.NewKeccakState())
	}
	k := h.states[d]
	k.Reset()
	return k
}

// read finishes k. It goes through h.word: a local array passed to the interface's methods
// would escape, an allocation per value.
func (h *oldHasher) read(k crypto.KeccakState) [32]byte {
	_, _ = k.Read(h.word[:])
	return h.word
}

// write absorbs one word into k (through h.word, as read).
func (h *oldHasher) write(k crypto.KeccakState, w [32]byte) {
	h.word = w
	k.Write(h.word[:])
}

// sum hashes b with the state of depth d.
func (h *oldHasher) sum(d int, b []byte) [32]byte {
	k := h.state(d)
	k.Write(b)
	return h.read(k)
}

// typeHash is keccak256(encodeType(st)), computed once per payload: the type, then every
// struct type it reaches sorted by name, each as "Name(type field,...)".
func (h *oldHasher) typeHash(st *oldStructType) ([32]byte, *oldValueError) {
	if st.hashed {
		return st.hash, nil
	}
	h.walk++
	h.reach = append(h.reach[:0], st)
	st.mark = h.walk
	total := 0
	for i := 0; i < len(h.reach); i++ {
		s := h.reach[i]
		if total += s.defLen; h.typeBytes+total > MaxTypedDataTypeBytes {
			return st.hash, oldValueErr(
				"the encoded types hashed exceed %d bytes (types that reach many or large types)",
				MaxTypedDataTypeBytes,
			)
		}
		for _, d := range s.deps {
			if d.mark != h.walk {
				d.mark = h.walk
				h.reach = append(h.reach, d)
			}
		}
	}
	h.typeBytes += total
	others := h.reach[1:]
	sort.Slice(others, func(i, j int) bool { return others[i].name < others[j].name })
	h.buf = h.buf[:0]
	for _, s := range h.reach {
		h.buf = oldAppendDef(h.buf, s)
	}
	if h.types == nil {
		h.types = crypto.NewKeccakState() // not a depth's: the struct being hashed holds its own
	}
	h.types.Reset()
	h.types.Write(h.buf)
	st.hash, st.hashed = h.read(h.types), true
	return st.hash, nil
}

func oldAppendDef(b []byte, s *oldStructType) []byte {
	b = append(b, s.name...)
	b = append(b, '(')
	for i, f := range s.fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, f.Type...)
		b = append(b, ' ')
		b = append(b, f.Name...)
	}
	return append(b, ')')
}

func (h *oldHasher) hashStruct(st *oldStructType, v any, depth int) ([32]byte, *oldValueError) {
	var w [32]byte
	if depth > MaxTypedDataDepth {
		return w, oldValueErr("nested deeper than %d levels", MaxTypedDataDepth)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return w, oldValueErr("want an object for struct %s", oldCut(st.name))
	}
	th, err := h.typeHash(st)
	if err != nil {
		return w, err
	}
	k := h.state(depth)
	h.write(k, th)
	for i, f := range st.fields {
		fv, ok := obj[f.Name]
		if !ok {
			return w, oldValueErr("missing").in(oldFieldSeg(f.Name))
		}
		fw, err := h.encodeValue(st.types[i], len(st.types[i].dims), fv, depth+1)
		if err != nil {
			return w, err.in(oldFieldSeg(f.Name))
		}
		h.write(k, fw)
	}
	return h.read(k), nil
}

// encodeValue is EIP-712 encodeData of one value of ft with level array dimensions left.
func (h *oldHasher) encodeValue(ft *oldFieldType, level int, v any, depth int) ([32]byte, *oldValueError) {
	var w [32]byte
	if depth > MaxTypedDataDepth {
		return w, oldValueErr("nested deeper than %d levels", MaxTypedDataDepth)
	}
	if level > 0 {
		items, ok := v.([]any)
		if !ok {
			return w, oldValueErr("want an array for %s", oldCut(oldArrayTypeString(ft, level)))
		}
		if n := ft.dims[level-1]; n != -1 && n != len(items) {
			return w, oldValueErr("want %s elements for %s, got %d",
				oldCut(oldDimString(ft, level)), oldCut(oldArrayTypeString(ft, level)), len(items))
		}
		k := h.state(depth)
		for i, it := range items {
			iw, err := h.encodeValue(ft, level-1, it, depth+1)
			if err != nil {
				return w, err.in(oldIndexSeg(i))
			}
			h.write(k, iw)
		}
		return h.read(k), nil
	}
	switch ft.oldKind {
	case oldKindStruct:
		return h.hashStruct(ft.st, v, depth)
	case oldKindString:
		s, ok := v.(string)
		if !ok {
			return w, oldValueErr("want a string")
		}
		h.buf = append(h.buf[:0], s...)
		return h.sum(depth, h.buf), nil
	case oldKindBytes:
		var ok bool
		if h.buf, ok = oldAppendHex(h.buf[:0], v); !ok {
			return w, oldValueErr("want a 0x-hex string")
		}
		return h.sum(depth, h.buf), nil
	case oldKindBool:
		b, ok := v.(bool)
		if !ok {
			return w, oldValueErr("want true or false")
		}
		if b {
			w[31] = 1
		}
		return w, nil
	case oldKindAddress:
		var ok bool
		if h.buf, ok = oldAppendHex(h.buf[:0], v); !ok || len(h.buf) != 20 {
			return w, oldValueErr("want a 20-byte 0x-hex address")
		}
		copy(w[12:], h.buf)
		return w, nil
	case oldKindBytesN:
		var ok bool
		if h.buf, ok = oldAppendHex(h.buf[:0], v); !ok || len(h.buf) != ft.size {
			return w, oldValueErr("want %d bytes of 0x-hex for %s", ft.size, oldCut(ft.raw))
		}
		copy(w[:], h.buf)
		return w, nil
	}
	if err := oldParseIntegerInto(&h.n, v); err != nil {
		return w, oldValueErr("%v", err)
	}
	if !oldIntFits(&h.n, ft.size, ft.signed) {
		return w, oldValueErr("%s out of range for %s", h.n.String(), oldCut(oldBaseName(ft)))
	}
	h.n.FillBytes(w[:])
	if h.n.Sign() < 0 { // two's complement over 256 bits
		carry := 1
		for i := 31; i >= 0; i-- {
			x := int(^w[i]) + carry
			w[i], carry = byte(x), x>>8
		}
	}
	return w, nil
}

// arrayTypeString is the type of a value with level dimensions left, as written.
func oldArrayTypeString(ft *oldFieldType, level int) string {
	t := ft.raw
	for i := len(ft.dims); i > level; i-- {
		t = t[:strings.LastIndexByte(t, '[')]
	}
	return t
}

func oldDimString(ft *oldFieldType, level int) string {
	t := oldArrayTypeString(ft, level)
	return t[strings.LastIndexByte(t, '[')+1 : len(t)-1]
}

func oldBaseName(ft *oldFieldType) string {
	if i := strings.IndexByte(ft.raw, '['); i >= 0 {
		return ft.raw[:i]
	}
	return ft.raw
}

// intFits reports whether x is an intN (signed) or uintN.
func oldIntFits(x *big.Int, bits int, signed bool) bool {
	if !signed {
		return x.Sign() >= 0 && x.BitLen() <= bits
	}
	bl := x.BitLen() // of |x|
	if x.Sign() >= 0 {
		return bl <= bits-1
	}
	return bl <= bits-1 || (bl == bits && x.TrailingZeroBits() == uint(bits-1))
}

// View is the eth.eip_712 policy view: primary_type, domain{name, version, chain_id,
// verifying_contract, salt} (the fields present) and message, integers as *big.Int and hex
// values lowercase. Its cost is linear in the payload; a signing request pays it only when a
// policy reads eth.
func (td *oldTypedData) View() map[string]any {
	domain := map[string]any{}
	if dv, ok := oldStructView(td.domain, td.p.Domain).(map[string]any); ok {
		for from, to := range oldDomainViewNames {
			if v, ok := dv[from]; ok {
				domain[to] = v
			}
		}
	}
	msg := map[string]any{}
	if td.primary != td.domain {
		if mv, ok := oldStructView(td.primary, td.p.Message).(map[string]any); ok {
			msg = mv
		}
	}
	return map[string]any{"primary_type": td.p.PrimaryType, "domain": domain, "message": msg}
}

// structView and valueView render values ParseTypedData accepted (nil for anything else).
func oldStructView(st *oldStructType, v any) any {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	view := make(map[string]any, len(st.fields))
	for i, f := range st.fields {
		view[f.Name] = oldValueView(st.types[i], len(st.types[i].dims), obj[f.Name])
	}
	return view
}

func oldValueView(ft *oldFieldType, level int, v any) any {
	if level > 0 {
		items, _ := v.([]any)
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = oldValueView(ft, level-1, it)
		}
		return out
	}
	switch ft.oldKind {
	case oldKindStruct:
		return oldStructView(ft.st, v)
	case oldKindString, oldKindBool:
		return v
	case oldKindBytes, oldKindAddress, oldKindBytesN:
		b, ok := oldAppendHex(nil, v)
		if !ok {
			return nil
		}
		return "0x" + hex.EncodeToString(b)
	}
	x, err := oldParseInteger(v)
	if err != nil {
		return nil
	}
	return x
}

// parseInteger reads a JSON number, a decimal string or a 0x-hex string (optionally negative).
func oldParseInteger(v any) (*big.Int, error) {
	n := new(big.Int)
	if err := oldParseIntegerInto(n, v); err != nil {
		return nil, err
	}
	return n, nil
}

func oldParseIntegerInto(n *big.Int, v any) error {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	default:
		return errors.New("want an integer (number, decimal or 0x-hex string)")
	}
	neg := strings.HasPrefix(s, "-")
	body := strings.TrimPrefix(s, "-")
	ok := false
	// big.Int.SetString allocates a reader per call: most values fit in 64 bits and take
	// strconv instead.
	switch {
	case strings.HasPrefix(body, "0x") || strings.HasPrefix(body, "0X"):
		if len(body) > 2 && len(body) <= 18 && oldHexDigits(body[2:]) {
			u, _ := strconv.ParseUint(body[2:], 16, 64)
			n.SetUint64(u)
			ok = true
		} else if len(body) > 2 && len(body) <= 66 {
			_, ok = n.SetString(body[2:], 16)
		}
	case len(body) > 0 && len(body) <= 19 && oldAllDigits(body):
		u, _ := strconv.ParseUint(body, 10, 64)
		n.SetUint64(u)
		ok = true
	case strings.ContainsAny(body, ".eE"):
		// JavaScript prints large numbers as 1e+21; accept them only when exact integers.
		if len(body) <= 100 {
			// The exponent is checked before Int: "1e999999999" would otherwise build an
			// integer of three billion bits.
			f, _, err := big.ParseFloat(body, 10, 1024, big.ToNearestEven)
			if err == nil && f.IsInt() && f.MantExp(nil) <= 256 {
				f.Int(n)
				ok = true
			}
		}
	default:
		if len(body) > 0 && len(body) <= 80 {
			_, ok = n.SetString(body, 10)
		}
	}
	if !ok {
		return fmt.Errorf("not an integer: %s", oldQuote(s))
	}
	if neg {
		n.Neg(n)
	}
	return nil
}

// appendHex appends the bytes of a 0x-hex string value (an odd digit count reads as if it
// had a leading 0).
func oldAppendHex(dst []byte, v any) ([]byte, bool) {
	s, ok := v.(string)
	if !ok || !(strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")) {
		return dst, false
	}
	s = s[2:]
	if len(s)%2 == 1 {
		lo, ok := oldFromHexChar(s[0])
		if !ok {
			return dst, false
		}
		dst = append(dst, lo)
		s = s[1:]
	}
	for i := 0; i < len(s); i += 2 {
		hi, ok1 := oldFromHexChar(s[i])
		lo, ok2 := oldFromHexChar(s[i+1])
		if !ok1 || !ok2 {
			return dst, false
		}
		dst = append(dst, hi<<4|lo)
	}
	return dst, true
}

func oldFromHexChar(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func oldHexDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if _, ok := oldFromHexChar(s[i]); !ok {
			return false
		}
	}
	return true
}
