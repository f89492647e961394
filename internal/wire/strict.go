package wire

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// CheckJSON refuses, in one pass over a request body, what encoding/json would accept but make
// mean something other than the bytes that were signed:
//   - invalid UTF-8 inside a string (encoding/json silently replaces it with U+FFFD, so the
//     stored value would differ from the signed one), and \u escapes of lone surrogates (the
//     same replacement);
//   - an object naming one member twice (encoding/json keeps the last, while a verifier or a
//     policy reading the first would see another request).
//
// It does not check the JSON grammar beyond what it needs to walk the body: a body that is not
// JSON is refused by the decoder that runs after it. The error names the member (as
// "organizationId" or "parameters.accounts[1].path").
func CheckJSON(raw []byte) *FieldError {
	s := scanner{b: raw}
	s.value("")
	return s.err
}

type scanner struct {
	b   []byte
	i   int
	err *FieldError
}

func (s *scanner) fail(path, reason string) {
	if s.err == nil {
		if path == "" {
			path = "body"
		}
		s.err = Refused(path, reason)
	}
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

func (s *scanner) value(path string) {
	s.ws()
	if s.err != nil || s.i >= len(s.b) {
		return
	}
	switch s.b[s.i] {
	case '{':
		s.i++
		seen := map[string]struct{}{}
		for s.err == nil {
			s.ws()
			if s.i >= len(s.b) {
				return
			}
			if s.b[s.i] == '}' {
				s.i++
				return
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.b[s.i] != '"' {
				return // not JSON: the decoder says so
			}
			key, ok := s.str(path)
			if !ok {
				return
			}
			member := key
			if path != "" {
				member = path + "." + key
			}
			if _, dup := seen[key]; dup {
				s.fail(member, "the member appears twice in the object")
				return
			}
			seen[key] = struct{}{}
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == ':' {
				s.i++
			}
			s.value(member)
		}
	case '[':
		s.i++
		for n := 0; s.err == nil; {
			s.ws()
			if s.i >= len(s.b) {
				return
			}
			switch s.b[s.i] {
			case ']':
				s.i++
				return
			case ',':
				s.i++
				n++
				continue
			}
			before := s.i
			s.value(path + "[" + strconv.Itoa(n) + "]")
			if s.i == before {
				return
			}
		}
	case '"':
		s.str(path)
	default:
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			s.i++
		}
	}
}

// str reads a string at s.i (on its opening quote), checking its UTF-8 and escapes; it returns
// the string's raw content (escapes kept), which is enough to compare member names.
func (s *scanner) str(path string) (string, bool) {
	start := s.i + 1
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			out := string(s.b[start:s.i])
			s.i++
			return out, true
		case c == '\\':
			if s.i+1 >= len(s.b) {
				s.i = len(s.b)
				return "", false
			}
			if s.b[s.i+1] != 'u' {
				s.i += 2
				continue
			}
			r, ok := hex4(s.b, s.i+2)
			if !ok {
				s.i = len(s.b)
				return "", false
			}
			s.i += 6
			if utf16.IsSurrogate(r) {
				// A high surrogate must be followed by an escaped low one.
				r2, ok2 := rune(0), false
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					r2, ok2 = hex4(s.b, s.i+2)
				}
				if !ok2 || utf16.DecodeRune(r, r2) == utf8.RuneError {
					s.fail(path, "a \\u escape names a lone UTF-16 surrogate, which is not a character")
					return "", false
				}
				s.i += 6
			}
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && size <= 1 {
				s.fail(path, "the string is not valid UTF-8")
				return "", false
			}
			s.i += size
		}
	}
	return "", false
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[i:i+4]), 16, 32)
	return rune(v), err == nil
}
