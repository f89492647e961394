package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Members reads the members of the JSON object raw that names lists, as json.Unmarshal into a
// struct with those members reads them, without the decoder's reflection: values[i] is the
// value of names[i], nil when it is absent. It returns false, leaving the caller to the
// decoder, whenever the decoder could read raw otherwise: raw is not a valid JSON object, a
// member name is written with an escape, a member is named twice (the decoder keeps the last),
// or there is another member and others is false, or another member whose name holds non-ASCII
// or matches a listed one regardless of case (the decoder matches names without regard to case).
func Members(raw []byte, names []string, values [][]byte, others bool) bool {
	if !json.Valid(raw) {
		return false
	}
	return MembersValid(raw, names, values, others)
}

// MembersValid is Members for a raw already known to be valid JSON (CheckBody said so, or
// json.Valid): it does not read raw a second time to check.
func MembersValid(raw []byte, names []string, values [][]byte, others bool) bool {
	clear(values)
	return EachMember(raw, func(name []byte, escaped bool, v []byte) bool {
		if escaped {
			return false
		}
		for i, n := range names {
			if string(name) == n {
				if values[i] != nil {
					return false
				}
				values[i] = v
				return true
			}
		}
		if !others || !isASCII(name) {
			return false
		}
		for _, n := range names {
			if strings.EqualFold(string(name), n) {
				return false
			}
		}
		return true
	})
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// EachMember calls fn with each member of the JSON object raw, in order: its name as written
// between the quotes (escaped is true when it holds a backslash escape, so that it is not the
// name's value) and its value's bytes. raw must be valid JSON (json.Valid); EachMember returns
// false when it is not an object or fn returns false. It lets a decoder read a request's few
// top-level members without encoding/json's reflection, leaving anything unusual to it.
func EachMember(raw []byte, fn func(name []byte, escaped bool, value []byte) bool) bool {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return true
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return false
		}
		end, escaped := skipString(raw, i)
		name := raw[i+1 : end-1]
		i = skipWS(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		start := skipWS(raw, i+1)
		end = skipValue(raw, start)
		if end <= start || !fn(name, escaped, raw[start:end]) {
			return false
		}
		i = skipWS(raw, end)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case '}':
			return true
		case ',':
			i = skipWS(raw, i+1)
		default:
			return false
		}
	}
	return false
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] (its opening quote), and
// whether it holds an escape.
func skipString(b []byte, i int) (end int, escaped bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return len(b), escaped
}

// skipValue returns the index after the valid JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		end, _ := skipString(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := skipString(b, j)
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// PlainString is the value of the JSON string v when it has no escapes and holds valid UTF-8
// (a decoder returns such a string as it is); ok is false for any other value.
func PlainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}
