package ethereum

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/crypto"
)

// Hashing walks the domain's and the message's JSON in the payload, guided by their types,
// in one of two ways.
//
// The fast walk (fastStruct, fastValue) reads the bytes in the order written: a struct's
// members that come in type order (as viem and ethers write them) are encoded as they come and
// absorbed at once, a member that comes early is skipped and read when its turn comes, and
// members the type does not declare are skipped; arrays are hashed element by element. It
// allocates nothing per value, and only reports whether it succeeded.
//
// When it does not, the exact walk (exactStruct, exactValue) reads the payload again as the
// first implementation read its decoded maps and slices, to find the error that one reported:
// fields in type order, a missing field before the values of the fields after it, an array's
// length before its elements, and a member named twice taken at its last value. It skips
// over each struct's members once more to index them, so its time grows with the depth of
// the structs as well (bounded by MaxTypedDataDepth); it is only run for payloads refused.

// hasher hashes one payload: a struct or an array at depth d streams its words into the
// Keccak state of depth d (its members, one level deeper, use the states beyond); one integer
// parser and a few buffers serve every value.
type hasher struct {
	intParser
	states    []crypto.KeccakState // by depth, made on first use (at most MaxTypedDataDepth+2)
	types     crypto.KeccakState   // for type hashes
	typeBuf   []byte               // an encoded type
	str       []byte               // a string value unescaped
	key       []byte               // a member name unescaped
	chunk     [256]byte            // bytes values decoded from hex, a chunk at a time
	word      [32]byte
	walk      int // dependency walks so far (structType.mark)
	typeBytes int // encoded type bytes hashed so far (MaxTypedDataTypeBytes)
	reach     []*structType

	fields [][]int   // where the fields' values are, for the struct at each depth (fieldsAt)
	body   []byte    // exact walk: the payload's JSON value, where fields' values are
	path   []pathSeg // exact walk: where it is, below its root
	root   string    // exact walk: "domain" or "message"
	dup    string    // exact walk: the path of the first member named twice
	bad    []byte    // the last integer refused, for its error
}

// pathSeg is a field name, or an array index (name "").
type pathSeg struct {
	name string
	i    int
}

func newHasher() *hasher { return &hasher{} }

// state returns the reset Keccak state of depth d.
func (h *hasher) state(d int) crypto.KeccakState {
	for len(h.states) <= d {
		h.states = append(h.states, crypto.NewKeccakState())
	}
	k := h.states[d]
	k.Reset()
	return k
}

// read finishes k. It goes through h.word: a local array passed to the interface's methods
// would escape, an allocation per value.
func (h *hasher) read(k crypto.KeccakState) [32]byte {
	_, _ = k.Read(h.word[:])
	return h.word
}

// write absorbs one word into k (through h.word, as read).
func (h *hasher) write(k crypto.KeccakState, w [32]byte) {
	h.word = w
	k.Write(h.word[:])
}

// sum hashes b with the state of depth d.
func (h *hasher) sum(d int, b []byte) [32]byte {
	k := h.state(d)
	k.Write(b)
	return h.read(k)
}

// typeHash is keccak256(encodeType(st)), computed once per payload: the type, then every
// struct type it reaches sorted by name, each as "Name(type field,...)".
func (h *hasher) typeHash(st *structType) ([32]byte, *valueError) {
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
			return st.hash, valueErr(
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
	h.typeBuf = h.typeBuf[:0]
	for _, s := range h.reach {
		h.typeBuf = appendDef(h.typeBuf, s)
	}
	if h.types == nil {
		h.types = crypto.NewKeccakState() // not a depth's: the struct being hashed holds its own
	}
	h.types.Reset()
	h.types.Write(h.typeBuf)
	st.hash, st.hashed = h.read(h.types), true
	return st.hash, nil
}

func appendDef(b []byte, s *structType) []byte {
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

// digest is keccak256(0x19 0x01 ‖ hashStruct(domain) ‖ hashStruct(message)): the fast walk's,
// or the exact walk's error.
func (h *hasher) digest(td *TypedData, structs map[string]*structType) ([32]byte, error) {
	if d, ok := h.fastDigest(td); ok {
		return d, nil
	}
	for _, st := range structs { // the exact walk accounts for type hashes from the start
		st.hashed = false
	}
	h.typeBytes = 0
	return h.exactDigest(td)
}

func (h *hasher) fastDigest(td *TypedData) (d [32]byte, ok bool) {
	if td.domainObjs.n != 1 || td.messageObjs.n != 1 {
		return d, false // named twice: refused by the exact walk
	}
	var buf [2 + 2*32]byte
	buf[0], buf[1] = 0x19, 0x01
	n := 2 + 32
	var w [32]byte
	if w, _, ok = h.fastStruct(td.domain, td.domainObjs.first, 0, 0); !ok {
		return d, false
	}
	copy(buf[2:], w[:])
	if td.primary != td.domain {
		if w, _, ok = h.fastStruct(td.primary, td.messageObjs.first, 0, 0); !ok {
			return d, false
		}
		n += copy(buf[n:], w[:])
	}
	return h.sum(0, buf[:n]), true
}

// fastStruct is hashStruct of the object at b[i], and the index past it.
func (h *hasher) fastStruct(st *structType, b []byte, i, depth int) (w [32]byte, end int, ok bool) {
	if depth > MaxTypedDataDepth || b[i] != '{' {
		return w, 0, false
	}
	th, err := h.typeHash(st)
	if err != nil {
		return w, 0, false
	}
	// Fields are absorbed in type order: a member that comes in that order (as viem and ethers
	// write them) at once; one that comes early is skipped, its place noted, and read when the
	// fields before it are in. Skipped and read again, nested structs whose members all come
	// early cost time with their depth, as the exact walk does.
	k := h.state(depth)
	h.write(k, th)
	next := 0       // the next field to absorb
	var early []int // by field: 0, or 1 + where in b its value is; -1 once absorbed from there
	for {
		name, v, more := nextMember(b, i)
		if !more {
			end = v
			break
		}
		f, declared := st.index[string(h.memberName(name))]
		switch {
		case !declared:
			i = skipValue(b, v)
		case f < next || early != nil && early[f] != 0:
			return w, 0, false // named twice
		case f > next:
			if early == nil {
				early = h.fieldsAt(depth, len(st.fields))
			}
			early[f] = v + 1
			i = skipValue(b, v)
		default:
			var fw [32]byte
			if fw, i, ok = h.fastField(st, f, b, v, depth); !ok {
				return w, 0, false
			}
			h.write(k, fw)
			for next++; early != nil && next < len(early) && early[next] > 0; next++ {
				if fw, _, ok = h.fastField(st, next, b, early[next]-1, depth); !ok {
					return w, 0, false
				}
				early[next] = -1
				h.write(k, fw)
			}
		}
		i = skipBlank(b, i)
	}
	if next < len(st.fields) {
		return w, 0, false // missing
	}
	return h.read(k), end, true
}

// fastField is encodeData of field f of st, whose value is at b[v].
func (h *hasher) fastField(st *structType, f int, b []byte, v, depth int) ([32]byte, int, bool) {
	ft := st.types[f]
	return h.fastValue(ft, len(ft.dims), b, v, depth+1)
}

// fastValue is encodeData of the value at b[i] of ft with level array dimensions left.
func (h *hasher) fastValue(ft *fieldType, level int, b []byte, i, depth int) (w [32]byte, end int, ok bool) {
	if depth > MaxTypedDataDepth {
		return w, 0, false
	}
	if level == 0 {
		if ft.kind == kindStruct {
			return h.fastStruct(ft.st, b, i, depth)
		}
		w, end, code := h.atomic(ft, b, i, depth)
		return w, end, code == atomicOK
	}
	if b[i] != '[' {
		return w, 0, false
	}
	k := h.state(depth)
	count := 0
	for {
		v, more := nextElement(b, i)
		if !more {
			end = v
			break
		}
		var iw [32]byte
		if iw, i, ok = h.fastValue(ft, level-1, b, v, depth+1); !ok {
			return w, 0, false
		}
		h.write(k, iw)
		count++
		i = skipBlank(b, i)
	}
	if n := ft.dims[level-1]; n != -1 && n != count {
		return w, 0, false
	}
	return h.read(k), end, true
}

// fieldsAt is a table of n fields for the struct being read at depth, cleared: a struct's
// fields' values are read one level deeper, so each depth needs one at a time.
func (h *hasher) fieldsAt(depth, n int) []int {
	for len(h.fields) <= depth {
		h.fields = append(h.fields, nil)
	}
	if cap(h.fields[depth]) < n {
		h.fields[depth] = make([]int, n)
	}
	t := h.fields[depth][:n]
	clear(t)
	return t
}

// memberName is a member's name (quotes included, as written) unescaped.
func (h *hasher) memberName(name []byte) []byte {
	_, escaped, high := stringEnd(name, 0)
	return stringValue(name, escaped, high, &h.key)
}

// stringAt is the value of the string at b[i], and the index past it.
func (h *hasher) stringAt(b []byte, i int) (s []byte, end int) {
	end, escaped, high := stringEnd(b, i)
	return stringValue(b[i:end], escaped, high, &h.str), end
}

// atomicErr says why an atomic value was refused (atomicOK: it was not).
type atomicErr uint8

const (
	atomicOK atomicErr = iota
	wantString
	wantHex
	wantBool
	wantAddress
	wantBytesN
	wantInteger
	notInteger
	outOfRange
)

// atomic is encodeData of the atomic value at b[i] of ft's base type, and the index past it.
func (h *hasher) atomic(ft *fieldType, b []byte, i, depth int) (w [32]byte, end int, e atomicErr) {
	c := b[i]
	switch ft.kind {
	case kindString:
		if c != '"' {
			return w, 0, wantString
		}
		s, end := h.stringAt(b, i)
		return h.sum(depth, s), end, atomicOK
	case kindBytes:
		if c != '"' {
			return w, 0, wantHex
		}
		s, end := h.stringAt(b, i)
		k := h.state(depth)
		if !hexPrefixed(s) || !h.writeHex(k, s[2:]) {
			return w, 0, wantHex
		}
		return h.read(k), end, atomicOK
	case kindBool:
		switch c {
		case 't':
			w[31] = 1
			return w, i + 4, atomicOK
		case 'f':
			return w, i + 5, atomicOK
		}
		return w, 0, wantBool
	case kindAddress, kindBytesN:
		size, into, refusal := 20, w[12:], wantAddress
		if ft.kind == kindBytesN {
			size, into, refusal = ft.size, w[:ft.size], wantBytesN
		}
		if c != '"' {
			return w, 0, refusal
		}
		s, end := h.stringAt(b, i)
		if !hexPrefixed(s) || (len(s)-1)/2 != size || !decodeHex(into, s[2:]) {
			return w, 0, refusal
		}
		return w, end, atomicOK
	}
	var s []byte
	switch {
	case c == '"':
		s, end = h.stringAt(b, i)
		s = bytes.TrimSpace(s)
	case c == '-' || '0' <= c && c <= '9':
		end = numberEnd(b, i)
		s = b[i:end]
	default:
		return w, 0, wantInteger
	}
	if !h.parse(s) {
		h.bad = s
		return w, 0, notInteger
	}
	if !intFits(&h.n, ft.size, ft.signed) {
		return w, 0, outOfRange
	}
	h.n.FillBytes(w[:])
	if h.n.Sign() < 0 { // two's complement over 256 bits
		carry := 1
		for i := 31; i >= 0; i-- {
			x := int(^w[i]) + carry
			w[i], carry = byte(x), x>>8
		}
	}
	return w, end, atomicOK
}

// writeHex absorbs the bytes of hex digits into k, a chunk at a time.
func (h *hasher) writeHex(k crypto.KeccakState, digits []byte) bool {
	if len(digits)%2 == 1 {
		if !decodeHex(h.chunk[:1], digits[:1]) {
			return false
		}
		k.Write(h.chunk[:1])
		digits = digits[1:]
	}
	for len(digits) > 0 {
		n := min(len(digits), 2*len(h.chunk))
		if !decodeHex(h.chunk[:n/2], digits[:n]) {
			return false
		}
		k.Write(h.chunk[:n/2])
		digits = digits[n:]
	}
	return true
}

// atomicError is the refusal of an atomic value, as the first implementation worded it.
func (h *hasher) atomicError(e atomicErr, ft *fieldType) *valueError {
	switch e {
	case wantString:
		return valueErr("want a string")
	case wantHex:
		return valueErr("want a 0x-hex string")
	case wantBool:
		return valueErr("want true or false")
	case wantAddress:
		return valueErr("want a 20-byte 0x-hex address")
	case wantBytesN:
		return valueErr("want %d bytes of 0x-hex for %s", ft.size, cut(ft.raw))
	case wantInteger:
		return valueErr("want an integer (number, decimal or 0x-hex string)")
	case notInteger:
		return valueErr("not an integer: %s", quote(string(h.bad)))
	}
	return valueErr("%s out of range for %s", h.n.String(), cut(baseName(ft)))
}

// domainPresent reports which EIP712Domain fields the domain holds with a value other than
// null (a member named twice: its last value), to derive the domain type.
func (h *hasher) domainPresent(objs objects) (present [5]bool) {
	for o := range objs.all {
		for i := 0; ; {
			name, v, more := nextMember(o, i)
			if !more {
				break
			}
			key := h.memberName(name)
			for j, f := range domainFields {
				if string(key) == f.Name {
					present[j] = o[v] != 'n'
				}
			}
			i = skipBlank(o, skipValue(o, v))
		}
	}
	return present
}

// valueError is an error in the message or the domain, with the path to the value built only
// when there is an error (segments innermost first).
type valueError struct {
	rev []string
	msg string
}

func valueErr(format string, a ...any) *valueError {
	return &valueError{msg: fmt.Sprintf(format, a...)}
}

func (e *valueError) in(segment string) *valueError {
	e.rev = append(e.rev, segment)
	return e
}

// at completes the path under root and returns the error.
func (e *valueError) at(root string) error {
	var b strings.Builder
	b.WriteString(root)
	for i := len(e.rev) - 1; i >= 0; i-- {
		b.WriteString(e.rev[i])
	}
	return typedErr("%s: %s", b.String(), e.msg)
}

func fieldSeg(name string) string { return "." + cut(name) }
func indexSeg(i int) string       { return "[" + strconv.Itoa(i) + "]" }

// exactDigest walks the payload as the first implementation did and returns its error; if it
// finds none, the payload named a member twice (the fast walk refuses that), and that is the
// error.
func (h *hasher) exactDigest(td *TypedData) ([32]byte, error) {
	var d [32]byte
	h.body = td.domainObjs.body
	for _, m := range []objects{td.domainObjs, td.messageObjs} {
		if m.n > 1 && h.dup == "" {
			h.dup = m.name
		}
	}
	buf := make([]byte, 0, 66)
	buf = append(buf, 0x19, 0x01)
	h.root = "domain"
	domainHash, verr := h.exactStruct(td.domain, nil, &td.domainObjs, 0)
	if verr != nil {
		return d, verr.at("domain")
	}
	buf = append(buf, domainHash[:]...)
	if td.primary != td.domain {
		h.root = "message"
		msgHash, verr := h.exactStruct(td.primary, nil, &td.messageObjs, 0)
		if verr != nil {
			return d, verr.at("message")
		}
		buf = append(buf, msgHash[:]...)
	}
	if h.dup != "" {
		return d, typedErr("%s: named more than once in its object", h.dup)
	}
	return h.sum(0, buf), nil
}

// exactStruct is hashStruct of a struct value: the value v, or, at the root, the objects
// encoding/json merged into one map.
func (h *hasher) exactStruct(st *structType, v []byte, root *objects, depth int) ([32]byte, *valueError) {
	var w [32]byte
	if depth > MaxTypedDataDepth {
		return w, valueErr("nested deeper than %d levels", MaxTypedDataDepth)
	}
	if root == nil && v[0] != '{' {
		return w, valueErr("want an object for struct %s", cut(st.name))
	}
	th, err := h.typeHash(st)
	if err != nil {
		return w, err
	}
	slots := h.fieldsAt(depth, len(st.fields))
	if root == nil {
		h.index(st, v, slots)
	} else {
		for o := range root.all {
			h.index(st, o, slots)
		}
	}
	k := h.state(depth)
	h.write(k, th)
	for i, f := range st.fields {
		if slots[i] == 0 {
			return w, valueErr("missing").in(fieldSeg(f.Name))
		}
		h.path = append(h.path, pathSeg{name: f.Name})
		fw, err := h.exactValue(st.types[i], len(st.types[i].dims), h.body[slots[i]-1:], depth+1)
		h.path = h.path[:len(h.path)-1]
		if err != nil {
			return w, err.in(fieldSeg(f.Name))
		}
		h.write(k, fw)
	}
	return h.read(k), nil
}

// index finds the values of st's fields in the object o, a slice of h.body, as a map would
// hold them: a member named twice keeps its last value (and is noted, to be refused). slots
// gets 1 + where in h.body each value is.
func (h *hasher) index(st *structType, o []byte, slots []int) {
	base := cap(h.body) - cap(o)
	for i := 0; ; {
		name, v, more := nextMember(o, i)
		if !more {
			return
		}
		if f, declared := st.index[string(h.memberName(name))]; declared {
			if slots[f] != 0 && h.dup == "" {
				h.dup = h.pathString(st.fields[f].Name)
			}
			slots[f] = base + v + 1
		}
		i = skipBlank(o, skipValue(o, v))
	}
}

// exactValue is encodeData of the value at the start of v (a slice of h.body running to its
// end) of ft with level array dimensions left.
func (h *hasher) exactValue(ft *fieldType, level int, v []byte, depth int) ([32]byte, *valueError) {
	var w [32]byte
	if depth > MaxTypedDataDepth {
		return w, valueErr("nested deeper than %d levels", MaxTypedDataDepth)
	}
	if level == 0 {
		if ft.kind == kindStruct {
			return h.exactStruct(ft.st, v, nil, depth)
		}
		w, _, e := h.atomic(ft, v, 0, depth)
		if e != atomicOK {
			return w, h.atomicError(e, ft)
		}
		return w, nil
	}
	if v[0] != '[' {
		return w, valueErr("want an array for %s", cut(arrayTypeString(ft, level)))
	}
	if n := ft.dims[level-1]; n != -1 {
		if count := countElements(v); n != count {
			return w, valueErr("want %s elements for %s, got %d",
				cut(dimString(ft, level)), cut(arrayTypeString(ft, level)), count)
		}
	}
	k := h.state(depth)
	for i, n := 0, 0; ; n++ {
		e, more := nextElement(v, i)
		if !more {
			break
		}
		end := skipValue(v, e)
		h.path = append(h.path, pathSeg{i: n})
		iw, err := h.exactValue(ft, level-1, v[e:], depth+1)
		h.path = h.path[:len(h.path)-1]
		if err != nil {
			return w, err.in(indexSeg(n))
		}
		h.write(k, iw)
		i = skipBlank(v, end)
	}
	return h.read(k), nil
}

func countElements(v []byte) int {
	count := 0
	for i := 0; ; count++ {
		e, more := nextElement(v, i)
		if !more {
			return count
		}
		i = skipBlank(v, skipValue(v, e))
	}
}

// pathString is the exact walk's path to the field name of the struct it is in.
func (h *hasher) pathString(name string) string {
	var b strings.Builder
	b.WriteString(h.root)
	for _, s := range h.path {
		if s.name != "" {
			b.WriteString(fieldSeg(s.name))
		} else {
			b.WriteString(indexSeg(s.i))
		}
	}
	b.WriteString(fieldSeg(name))
	return b.String()
}
