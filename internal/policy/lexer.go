package policy

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokIdent
	tokInt
	tokString
	tokAnd      // &&
	tokOr       // ||
	tokNot      // !
	tokEq       // ==
	tokNe       // !=
	tokLt       // <
	tokLe       // <=
	tokGt       // >
	tokGe       // >=
	tokMinus    // -
	tokLParen   // (
	tokRParen   // )
	tokLBracket // [
	tokRBracket // ]
	tokComma    // ,
	tokDot      // .
	tokDotDot   // ..
)

var tokenText = [...]string{
	tokEOF: "end of input", tokAnd: "&&", tokOr: "||", tokNot: "!", tokEq: "==", tokNe: "!=",
	tokLt: "<", tokLe: "<=", tokGt: ">", tokGe: ">=", tokMinus: "-", tokLParen: "(", tokRParen: ")",
	tokLBracket: "[", tokRBracket: "]", tokComma: ",", tokDot: ".", tokDotDot: "..",
}

type token struct {
	kind tokenKind
	pos  int    // byte offset of the first byte
	end  int    // byte offset just past the token
	text string // identifier name, integer digits, or string contents
}

// describe renders a token for "expected X but found Y" messages.
func (t token) describe() string {
	switch t.kind {
	case tokIdent:
		if t.text == "in" || t.text == "true" || t.text == "false" {
			return "'" + t.text + "'"
		}
		return "identifier '" + t.text + "'"
	case tokInt:
		return "integer " + abbreviate(t.text)
	case tokString:
		return "string '" + abbreviate(t.text) + "'"
	case tokEOF:
		return "end of input"
	}
	return "'" + tokenText[t.kind] + "'"
}

func abbreviate(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// lex splits src into tokens. Whitespace is space, tab, CR and LF.
// Strings are single-quoted; there are no escape sequences (the docs define
// none), so a string runs to the next single quote and cannot contain one.
func lex(src string) ([]token, *SyntaxError) {
	toks := make([]token, 0, len(src)/3+1)
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			toks = append(toks, token{kind: tokIdent, pos: i, end: j, text: src[i:j]})
			i = j
			continue
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(src) && src[j] >= '0' && src[j] <= '9' {
				j++
			}
			if j < len(src) && isIdentStart(src[j]) {
				return nil, newSyntaxError(
					src,
					j,
					fmt.Sprintf("invalid character %s in integer literal", quoteChar(src, j)),
				)
			}
			if j-i > maxIntDigits {
				return nil, newSyntaxError(src, i, "integer literal too long")
			}
			toks = append(toks, token{kind: tokInt, pos: i, end: j, text: src[i:j]})
			i = j
			continue
		case c == '\'':
			k := strings.IndexByte(src[i+1:], '\'')
			if k < 0 {
				return nil, newSyntaxError(src, i, "unterminated string literal")
			}
			j := i + 1 + k
			s := src[i+1 : j]
			if !utf8.ValidString(s) {
				return nil, newSyntaxError(src, i, "string literal is not valid UTF-8")
			}
			toks = append(toks, token{kind: tokString, pos: i, end: j + 1, text: s})
			i = j + 1
			continue
		}
		two := ""
		if i+1 < len(src) {
			two = src[i : i+2]
		}
		kind, n := tokEOF, 0
		switch two {
		case "&&":
			kind, n = tokAnd, 2
		case "||":
			kind, n = tokOr, 2
		case "==":
			kind, n = tokEq, 2
		case "!=":
			kind, n = tokNe, 2
		case "<=":
			kind, n = tokLe, 2
		case ">=":
			kind, n = tokGe, 2
		case "..":
			kind, n = tokDotDot, 2
		}
		if n == 0 {
			n = 1
			switch c {
			case '!':
				kind = tokNot
			case '<':
				kind = tokLt
			case '>':
				kind = tokGt
			case '-':
				kind = tokMinus
			case '(':
				kind = tokLParen
			case ')':
				kind = tokRParen
			case '[':
				kind = tokLBracket
			case ']':
				kind = tokRBracket
			case ',':
				kind = tokComma
			case '.':
				kind = tokDot
			case '&':
				return nil, newSyntaxError(src, i, "unexpected '&' (did you mean '&&'?)")
			case '|':
				return nil, newSyntaxError(src, i, "unexpected '|' (did you mean '||'?)")
			case '=':
				return nil, newSyntaxError(src, i, "unexpected '=' (did you mean '=='?)")
			case '"':
				return nil, newSyntaxError(src, i, "strings use single quotes, not double quotes")
			default:
				return nil, newSyntaxError(src, i, "unexpected character "+quoteChar(src, i))
			}
		}
		toks = append(toks, token{kind: kind, pos: i, end: i + n})
		i += n
	}
	toks = append(toks, token{kind: tokEOF, pos: len(src), end: len(src)})
	return toks, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func quoteChar(src string, i int) string {
	r, _ := utf8.DecodeRuneInString(src[i:])
	if r == utf8.RuneError {
		return fmt.Sprintf("byte 0x%02x", src[i])
	}
	return fmt.Sprintf("%q", r)
}

// SyntaxError is a compile-time error: a lexical or grammatical error, a
// violated limit, or a type error the checker can prove without an
// environment. Pos is a byte offset into the source; Line and Col are
// 1-based, Col counting characters.
type SyntaxError struct {
	Pos  int
	Line int
	Col  int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

func newSyntaxError(src string, pos int, msg string) *SyntaxError {
	if pos > len(src) {
		pos = len(src)
	}
	line, col := 1, 1
	lineStart := 0
	for i := 0; i < pos; i++ {
		if src[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	col += utf8.RuneCountInString(src[lineStart:pos])
	return &SyntaxError{Pos: pos, Line: line, Col: col, Msg: msg}
}
