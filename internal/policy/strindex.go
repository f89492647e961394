package policy

import (
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Strings index by character (Unicode code point). Finding character i of a string, or its
// length in characters, means scanning it; doing that on every step made a loop over a long
// string quadratic (issue 23, item 8). The evaluator scans each long string once per evaluation
// (charged as EvalBytesPerStep work) and keeps what indexing needs in a small cache, so that each
// later index, slice or length is O(1).

// runeMark is how many characters apart strIndex records a byte offset: finding a character
// walks at most runeMark-1 characters from the mark before it.
const runeMark = 64

// nonASCIIScanCost is what scanning a byte of non-ASCII text costs, in bytes of string work:
// decoding UTF-8 character by character runs at about a quarter of the speed of isASCII.
const nonASCIIScanCost = 4

// strCacheSize is how many long strings an evaluation keeps indexed. A policy reads few strings
// by character (eth.tx.data, a typed-data field); one that reads many pays for each scan.
const strCacheSize = 4

// strIndex is what indexing one string by character needs.
type strIndex struct {
	s     string
	ascii bool  // every byte < 0x80: characters are bytes
	valid bool  // valid UTF-8: a slice at character boundaries needs no conversion
	runes int   // length in characters
	marks []int // byte offset of characters runeMark, 2·runeMark, ... (non-ASCII only)
}

// newStrIndex scans s once.
func newStrIndex(s string) strIndex { return buildStrIndex(s, isASCII(s)) }

// buildStrIndex indexes s, knowing whether it is ASCII.
func buildStrIndex(s string, ascii bool) strIndex {
	if ascii {
		return strIndex{s: s, ascii: true, valid: true, runes: len(s)}
	}
	x := strIndex{s: s, valid: true}
	for i := 0; i < len(s); {
		if x.runes%runeMark == 0 && x.runes > 0 {
			x.marks = append(x.marks, i)
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 { // an invalid byte is one character, read as U+FFFD
			x.valid = false
		}
		i += size
		x.runes++
	}
	return x
}

// offset is the byte offset of character i, 0 <= i <= runes.
func (x *strIndex) offset(i int) int {
	if x.ascii {
		return i
	}
	if i >= x.runes {
		return len(x.s)
	}
	off := 0
	if q := i / runeMark; q > 0 {
		off = x.marks[q-1]
	}
	for k := i % runeMark; k > 0; k-- {
		_, size := utf8.DecodeRuneInString(x.s[off:])
		off += size
	}
	return off
}

// slice is characters [lo, hi) as the language defines it: the characters of s, each invalid
// byte read as U+FFFD (what converting to []rune and back does).
func (x *strIndex) slice(lo, hi int) string {
	sub := x.s[x.offset(lo):x.offset(hi)]
	if x.valid {
		return sub
	}
	return validString(sub)
}

// validString is string([]rune(s)) without the []rune: each invalid byte becomes U+FFFD (three
// bytes), so the result is at most 3·len(s).
func validString(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

// strIndexOf returns the index of s, from the cache when s was indexed before in this evaluation.
// A string shorter than EvalBytesPerStep is scanned each time (that is within one step); a longer
// one is charged its length (nonASCIIScanCost times its length if it is not ASCII) and cached. The cache knows a string by its memory (the same value
// read twice from the environment, or from a variable, is the same memory).
func (ev *evaluator) strIndexOf(n node, s string) (strIndex, error) {
	if len(s) < EvalBytesPerStep {
		return newStrIndex(s), nil
	}
	p := unsafe.StringData(s)
	for i := range ev.strs {
		if c := &ev.strs[i]; len(c.s) == len(s) && unsafe.StringData(c.s) == p {
			return *c, nil
		}
	}
	if err := ev.charge(n, len(s)); err != nil {
		return strIndex{}, err
	}
	ascii := isASCII(s)
	if !ascii { // decoding UTF-8 character by character is several times slower than isASCII
		if err := ev.charge(n, (nonASCIIScanCost-1)*len(s)); err != nil {
			return strIndex{}, err
		}
	}
	x := buildStrIndex(s, ascii)
	ev.strs[ev.nextStr] = x
	ev.nextStr = (ev.nextStr + 1) % strCacheSize
	return x, nil
}

// isASCII reports whether every byte of s is below 0x80, eight bytes at a time.
func isASCII(s string) bool {
	for len(s) >= 8 {
		lo := uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
		hi := uint32(s[4]) | uint32(s[5])<<8 | uint32(s[6])<<16 | uint32(s[7])<<24
		if (lo|hi)&0x80808080 != 0 {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
