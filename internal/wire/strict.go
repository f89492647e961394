package wire

import (
	"bytes"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxJSONDepth bounds how deeply a request body's arrays and objects may nest. The deepest
// request the API and the auth proxy define nests 8 levels (create_users and
// create_sub_organization: body, parameters, users, user, authenticators, authenticator,
// attestation, transports); the limit is four times that (docs/limits.md §2).
const MaxJSONDepth = 32

// MaxObjectMembers bounds the members of one object. The request objects the API and the auth
// proxy define have at most a few dozen members; the one free-form map (the wallet kit's OAuth
// client ids by provider) a handful (docs/limits.md §2).
const MaxObjectMembers = 1024

// maxPathSegment shortens each member name in the field an error names, so that an error about
// a long name does not repeat it.
const maxPathSegment = 64

// smallObject is how many members an object may have before its duplicate check keeps a set of
// the names' hashes instead of comparing each new name with every earlier one (at most this many
// comparisons a member, so the check stays linear).
const smallObject = 16

// CheckJSON refuses, in one pass over a request body, what encoding/json would accept but make
// mean something other than the bytes that were signed, and what would cost far more than its
// size to decode:
//   - invalid UTF-8 inside a string (encoding/json silently replaces it with U+FFFD, so the
//     stored value would differ from the signed one), and \u escapes of lone surrogates (the
//     same replacement);
//   - an object naming one member twice as encoding/json reads names: escapes decoded and case
//     ignored (it matches a struct's fields by case-folded name and keeps the last, while a
//     verifier or a policy reading the first would see another request);
//   - arrays and objects nested deeper than MaxJSONDepth, and objects of more than
//     MaxObjectMembers members.
//
// Its cost is linear in the body: each byte is read once, member names are compared at most
// smallObject times each (or through a map), and the field an error names is built only for the
// error. It does not check the JSON grammar beyond what it needs to walk the body: a body that is
// not JSON is refused by the decoder that runs after it. The error names the member (as
// "organizationId" or "parameters.accounts[1].path").
func CheckJSON(raw []byte) *FieldError {
	_, fe := CheckBody(raw)
	return fe
}

// CheckBody is CheckJSON, and in the same pass it says whether raw is valid JSON as json.Valid
// judges it (the grammar: literals, numbers, escapes, separators, nothing after the value), so
// that the fast readers after it (MembersValid) need not read the body a second time. valid is
// false whenever fe is not nil; a body that is not valid JSON is still only refused by the
// decoder that runs after it, as before.
func CheckBody(raw []byte) (valid bool, fe *FieldError) {
	s := scanners.Get().(*scanner)
	defer s.release()
	s.b = raw
	s.value()
	if s.err != nil {
		return false, s.err
	}
	s.ws()
	return !s.bad && s.i == len(s.b), nil
}

// scanners are reused, so that a request's scan allocates nothing: its stacks keep their room.
var scanners = sync.Pool{New: func() any { return new(scanner) }}

// release empties s and returns it to the pool, unless a hostile body made it large: the name
// sets of large objects (at most MaxJSONDepth of them, up to MaxObjectMembers names each) and
// stacks past a request's usual size are left to the collector.
func (s *scanner) release() {
	sets := s.sets
	*s = scanner{path: s.path[:0], names: s.names[:0], arena: s.arena[:0], scratch: s.scratch[:0]}
	for _, set := range sets {
		if set != nil {
			return
		}
	}
	if cap(s.path) > MaxJSONDepth || cap(s.names) > 256 || cap(s.arena) > 4096 || cap(s.scratch) > 4096 {
		return
	}
	scanners.Put(s)
}

type scanner struct {
	b   []byte
	i   int
	err *FieldError
	// bad is set at the first thing json.Valid would refuse; the scan goes on as before, since
	// what it refuses takes precedence over the decoder's syntax error.
	bad bool
	// path is where the scanner is: one segment per open array or object (the member name or
	// element index being read in it), for the error's field.
	path []segment
	// names are the member names of the objects open on path, for the duplicate check; arena
	// holds the folded forms of those that are not plain. Both are stacks: an object truncates
	// them to where they were when it opened.
	names []memberName
	arena []byte
	// sets are the name-hash sets of the large objects open, one per depth; scratch folds a
	// plain name for hashing.
	sets    [MaxJSONDepth]map[uint64]struct{}
	scratch []byte
}

type segment struct {
	name  []byte // the member being read, raw (escapes kept); nil in an array or before a name
	index int    // the element being read, in an array
	array bool
}

// memberName is one member name as the decoder compares names: plain (ASCII without escapes,
// compared ignoring ASCII case) or folded (escapes decoded, each rune folded by foldRune).
type memberName struct {
	b     []byte
	plain bool
}

func (s *scanner) fail(reason string) {
	if s.err == nil {
		s.err = Refused(s.field(), reason)
	}
}

// field renders the path, "body" at the top.
func (s *scanner) field() string {
	var b strings.Builder
	for _, seg := range s.path {
		switch {
		case seg.array:
			b.WriteString("[" + strconv.Itoa(seg.index) + "]")
		case seg.name != nil:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			name := seg.name
			if len(name) > maxPathSegment {
				b.Write(name[:maxPathSegment])
				b.WriteString("…")
				continue
			}
			b.Write(name)
		}
	}
	if b.Len() == 0 || b.String()[0] == '[' {
		return "body" + b.String()
	}
	return b.String()
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value reads the value at s.i: arrays and objects by nesting one level deeper, at most
// MaxJSONDepth levels (the recursion is bounded by the same limit).
func (s *scanner) value() {
	s.ws()
	if s.err != nil {
		return
	}
	if s.i >= len(s.b) {
		s.bad = true
		return
	}
	switch c := s.b[s.i]; c {
	case '{', '[':
		if len(s.path) >= MaxJSONDepth {
			s.fail("arrays and objects nest deeper than the limit of " + strconv.Itoa(MaxJSONDepth) + " levels")
			return
		}
		s.i++
		s.path = append(s.path, segment{array: c == '['})
		if c == '{' {
			s.object()
		} else {
			s.array()
		}
		s.path = s.path[:len(s.path)-1]
	case '"':
		s.str()
	default:
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				s.bad = s.bad || !scalar(s.b[start:s.i])
				return
			}
			s.i++
		}
		s.bad = s.bad || !scalar(s.b[start:s.i])
	}
}

// The places of a scan inside an array or object, for the grammar: just opened, after an element
// (or member), after a comma.
const (
	opened = iota
	afterValue
	afterComma
)

// scalar reports whether tok is a JSON literal or number.
func scalar(tok []byte) bool {
	switch string(tok) {
	case "true", "false", "null":
		return true
	}
	i := 0
	if i < len(tok) && tok[i] == '-' {
		i++
	}
	switch {
	case i < len(tok) && tok[i] == '0':
		i++
	case i < len(tok) && '1' <= tok[i] && tok[i] <= '9':
		i = digits(tok, i)
	default:
		return false
	}
	if i < len(tok) && tok[i] == '.' {
		j := digits(tok, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(tok) && (tok[i] == 'e' || tok[i] == 'E') {
		i++
		if i < len(tok) && (tok[i] == '+' || tok[i] == '-') {
			i++
		}
		j := digits(tok, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(tok)
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func (s *scanner) object() {
	first, firstArena := len(s.names), len(s.arena)
	defer func() { s.names, s.arena = s.names[:first], s.arena[:firstArena] }()
	depth := len(s.path) - 1
	var seen map[uint64]struct{} // the names' hashes, once the object outgrows smallObject
	top := &s.path[depth]
	members := 0
	at := opened
	for s.err == nil {
		s.ws()
		if s.i >= len(s.b) {
			s.bad = true
			return
		}
		switch s.b[s.i] {
		case '}':
			s.bad = s.bad || at == afterComma
			s.i++
			return
		case ',':
			s.bad = s.bad || at != afterValue
			at = afterComma
			s.i++
			continue
		case '"':
			s.bad = s.bad || at == afterValue
		default:
			s.bad = true
			return // not JSON: the decoder says so
		}
		if members == MaxObjectMembers {
			top.name = nil
			s.fail("the object has more members than the limit of " + strconv.Itoa(MaxObjectMembers))
			return
		}
		members++
		start := s.i + 1
		top.name = nil // an error inside the name is the object's
		if !s.str() {
			return
		}
		raw := s.b[start : s.i-1]
		top.name = raw
		name := s.memberName(raw)
		earlier := s.names[first:]
		dup := false
		if len(earlier) < smallObject {
			for _, e := range earlier {
				if sameName(e, name) {
					dup = true
					break
				}
			}
		} else {
			if seen == nil {
				seen = s.set(depth)
				for _, e := range earlier {
					seen[s.hash(e)] = struct{}{}
				}
			}
			h := s.hash(name)
			if _, hit := seen[h]; hit {
				// The seed is secret, so a hit without a duplicate is chance (one in 2^64 a pair):
				// confirm it.
				for _, e := range earlier {
					if sameName(e, name) {
						dup = true
						break
					}
				}
			}
			seen[h] = struct{}{}
		}
		if dup {
			s.fail("the member appears twice in the object (names compare as the decoder reads them: " +
				"escapes decoded, case ignored)")
			return
		}
		s.names = append(s.names, name)
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ':' {
			s.i++
		} else {
			s.bad = true
		}
		s.value()
		at = afterValue
		top = &s.path[depth] // value may have grown s.path
	}
}

// set is an empty set of name hashes for an object at depth (one kept per depth, reused).
func (s *scanner) set(depth int) map[uint64]struct{} {
	if s.sets[depth] == nil {
		s.sets[depth] = make(map[uint64]struct{}, MaxObjectMembers)
	} else {
		clear(s.sets[depth])
	}
	return s.sets[depth]
}

// hash is a name's hash as names compare (its folded form), under the process's secret seed.
func (s *scanner) hash(n memberName) uint64 {
	if !n.plain {
		return maphash.Bytes(hashSeed, n.b)
	}
	s.scratch = s.scratch[:0]
	for _, c := range n.b {
		s.scratch = append(s.scratch, foldASCII(c))
	}
	return maphash.Bytes(hashSeed, s.scratch)
}

var hashSeed = maphash.MakeSeed()

func (s *scanner) array() {
	at := opened
	for s.err == nil {
		s.ws()
		if s.i >= len(s.b) {
			s.bad = true
			return
		}
		switch s.b[s.i] {
		case ']':
			s.bad = s.bad || at == afterComma
			s.i++
			return
		case ',':
			s.bad = s.bad || at != afterValue
			at = afterComma
			s.i++
			s.path[len(s.path)-1].index++
			continue
		}
		s.bad = s.bad || at == afterValue
		before := s.i
		s.value()
		if s.i == before {
			s.bad = true
			return
		}
		at = afterValue
	}
}

// memberName is raw (a member name's content, already checked by str) as names are compared.
func (s *scanner) memberName(raw []byte) memberName {
	plain := true
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return memberName{b: raw, plain: true}
	}
	start := len(s.arena)
	for i := 0; i < len(raw); {
		r, size := rune(raw[i]), 1
		switch {
		case raw[i] == '\\':
			r, size = unescape(raw, i)
		case raw[i] >= utf8.RuneSelf:
			r, size = utf8.DecodeRune(raw[i:])
		}
		s.arena = utf8.AppendRune(s.arena, foldRune(r))
		i += size
	}
	return memberName{b: s.arena[start:len(s.arena):len(s.arena)]}
}

// unescape decodes the escape at raw[i] (valid: str checked it), returning the rune and the
// escape's length.
func unescape(raw []byte, i int) (rune, int) {
	switch raw[i+1] {
	case 'u':
		r, _ := hex4(raw, i+2)
		if utf16.IsSurrogate(r) {
			r2, _ := hex4(raw, i+8)
			return utf16.DecodeRune(r, r2), 12
		}
		return r, 6
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	}
	return rune(raw[i+1]), 2 // \" \\ \/ (and what the decoder refuses anyway)
}

// foldRune is the smallest rune that folds to r under Unicode simple case folding, so that two
// names are the same for bytes.EqualFold (which encoding/json's field matching follows) exactly
// when their folded runes are equal.
func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// foldASCII is foldRune for an ASCII byte: the upper-case letter.
func foldASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

func sameName(a, b memberName) bool {
	switch {
	case a.plain && b.plain:
		return len(a.b) == len(b.b) && bytes.EqualFold(a.b, b.b)
	case !a.plain && !b.plain:
		return bytes.Equal(a.b, b.b)
	case a.plain:
		a, b = b, a
	}
	// a folded, b plain ASCII: equal when a is b's folded bytes.
	if len(a.b) != len(b.b) {
		return false
	}
	for i, c := range b.b {
		if a.b[i] != foldASCII(c) {
			return false
		}
	}
	return true
}

// str reads a string at s.i (on its opening quote), checking its UTF-8 and escapes, and leaves
// s.i after its closing quote; false if the body ends first or the string is refused.
func (s *scanner) str() bool {
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return true
		case c == '\\':
			if s.i+1 >= len(s.b) {
				s.i = len(s.b)
				s.bad = true
				return false
			}
			if e := s.b[s.i+1]; e != 'u' {
				s.bad = s.bad || !isEscape(e)
				s.i += 2
				continue
			}
			r, ok := hex4(s.b, s.i+2)
			if !ok {
				s.i = len(s.b)
				s.bad = true
				return false
			}
			s.i += 6
			if utf16.IsSurrogate(r) {
				// A high surrogate must be followed by an escaped low one.
				r2, ok2 := rune(0), false
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					r2, ok2 = hex4(s.b, s.i+2)
				}
				if !ok2 || utf16.DecodeRune(r, r2) == utf8.RuneError {
					s.fail("a \\u escape names a lone UTF-16 surrogate, which is not a character")
					return false
				}
				s.i += 6
			}
		case c < utf8.RuneSelf:
			s.bad = s.bad || c < 0x20 // control characters are escaped in JSON
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && size <= 1 {
				s.fail("the string is not valid UTF-8")
				return false
			}
			s.i += size
		}
	}
	s.bad = true // the body ends inside the string
	return false
}

// isEscape reports whether \e is one of JSON's one-character escapes.
func isEscape(e byte) bool {
	switch e {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	}
	return false
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var v rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
