package ethereum

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Reading JSON that encoding/json has already checked (ParseTypedData decodes the payload
// before it hashes it), in place: these helpers trust the syntax and allocate nothing but
// stringValue's buffer. Most take the index of a value's first byte and return the index just
// past it.

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipBlank(b []byte, i int) int {
	for i < len(b) && isBlank(b[i]) {
		i++
	}
	return i
}

// stringEnd is the end of the string at b[i] (its opening quote), and whether it holds an
// escape or a byte beyond ASCII: if neither, its bytes are its value.
func stringEnd(b []byte, i int) (end int, escaped, high bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, high
		case c == '\\':
			escaped = true
			i++ // the escaped byte; \u's four hex digits are plain bytes
		case c >= utf8.RuneSelf:
			high = true
		}
	}
	return len(b), escaped, high
}

// numberEnd is the end of the number at b[i].
func numberEnd(b []byte, i int) int {
	for i < len(b) {
		switch c := b[i]; {
		case '0' <= c && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue is the end of the value at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		end, _, _ := stringEnd(b, i)
		return end
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i, _, _ = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	case 't', 'n':
		return i + 4
	case 'f':
		return i + 5
	}
	return numberEnd(b, i)
}

// nextMember reads from the '{', ',' or '}' at b[i] (an object's start, or what follows one
// of its members) to the next member: its name as written (quotes included) and the index of
// its value; ok is false at the object's end, and value is then the index past its '}'.
func nextMember(b []byte, i int) (name []byte, value int, ok bool) {
	if b[i] != '}' {
		i = skipBlank(b, i+1)
	}
	if b[i] == '}' {
		return nil, i + 1, false
	}
	end, _, _ := stringEnd(b, i)
	name = b[i:end]
	i = skipBlank(b, end) // at ':'
	return name, skipBlank(b, i+1), true
}

// nextElement is nextMember for an array: from its '[', a ',' or its ']' to the index of the
// next element, or past the ']' (ok false).
func nextElement(b []byte, i int) (value int, ok bool) {
	if b[i] != ']' {
		i = skipBlank(b, i+1)
	}
	if b[i] == ']' {
		return i + 1, false
	}
	return i, true
}

// stringValue is the value of the JSON string s (quotes included; escaped and high as
// stringEnd reports them) as encoding/json decodes it: s's own bytes when they are plain
// UTF-8, else unescaped into *buf (grown to the exact size needed, then reused), with
// encoding/json's replacements of malformed UTF-8 and lone surrogates.
func stringValue(s []byte, escaped, high bool, buf *[]byte) []byte {
	s = s[1 : len(s)-1]
	if !escaped && (!high || utf8.Valid(s)) {
		return s
	}
	n := unescapedLen(s)
	if cap(*buf) < n {
		*buf = make([]byte, 0, n)
	}
	*buf = appendUnescaped((*buf)[:0], s)
	return *buf
}

// unescape walks the content of a checked JSON string as encoding/json's unquote does,
// calling emit for each byte or rune of its value.
func unescape(s []byte, emitByte func(byte), emitRune func(rune)) {
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			switch e := s[r+1]; e {
			case 'u':
				rr := getu4(s[r:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
						r += 6
						emitRune(dec)
						break
					}
					rr = unicode.ReplacementChar
				}
				emitRune(rr)
			default:
				emitByte(unescapeByte(e))
				r += 2
			}
		case c < utf8.RuneSelf:
			emitByte(c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			emitRune(rr) // utf8.RuneError for a malformed byte
		}
	}
}

func unescapeByte(e byte) byte {
	switch e {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return e // '"', '\\', '/'
}

func unescapedLen(s []byte) int {
	n := 0
	unescape(s, func(byte) { n++ }, func(r rune) { n += utf8.RuneLen(r) })
	return n
}

func appendUnescaped(dst, s []byte) []byte {
	unescape(s, func(c byte) { dst = append(dst, c) }, func(r rune) { dst = utf8.AppendRune(dst, r) })
	return dst
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		d, ok := fromHexChar(c)
		if !ok {
			return -1
		}
		r = r*16 + rune(d)
	}
	return r
}

func fromHexChar(c byte) (byte, bool) {
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

func hexDigits[S ~string | ~[]byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if _, ok := fromHexChar(s[i]); !ok {
			return false
		}
	}
	return true
}

// hexPrefixed reports whether s starts with 0x or 0X.
func hexPrefixed[S ~string | ~[]byte](s S) bool {
	return len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')
}

// decodeHex decodes hex digits into dst, which holds exactly (len(digits)+1)/2 bytes: an odd
// count reads as if it had a leading 0.
func decodeHex[S ~string | ~[]byte](dst []byte, digits S) bool {
	j := 0
	if len(digits)%2 == 1 {
		lo, ok := fromHexChar(digits[0])
		if !ok {
			return false
		}
		dst[0] = lo
		j = 1
	}
	for i := j; i < len(digits); i += 2 {
		hi, ok1 := fromHexChar(digits[i])
		lo, ok2 := fromHexChar(digits[i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[j] = hi<<4 | lo
		j++
	}
	return true
}
