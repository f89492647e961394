package policy

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"
)

// Limits that keep hostile policies from exhausting resources.
const (
	// MaxSourceLen is the longest accepted expression, in bytes.
	MaxSourceLen = 16 << 10
	// MaxDepth bounds expression nesting (parentheses, lists, calls,
	// postfix chains, unary operators).
	MaxDepth = 64
	// MaxListLiteral bounds the number of elements of a list literal.
	MaxListLiteral = 1024
	// MaxEvalSteps bounds the work of one evaluation, in steps: each node
	// visit is a step (so each predicate call of all/any/filter and each
	// element compared by in/contains is one), and an operation that scans,
	// compares, hashes or copies bytes costs one more step per
	// EvalBytesPerStep bytes it touches. Past it, evaluation fails with
	// LimitExceeded, so a policy's cost is bounded whatever strings it reads.
	MaxEvalSteps = 1 << 20
	// EvalBytesPerStep is the bytes of string work charged as one step:
	// comparing two strings of equal length, hashing a field name or map key,
	// scanning a string the first time it is indexed or sliced by character
	// (a non-ASCII string counts 4 bytes per byte: decoding UTF-8 is slower),
	// and converting a slice of a string that is not valid UTF-8 (3 bytes per
	// byte). A step is 5 to 30 ns; so is 64 bytes of that work, so an
	// evaluation stays within about 30 ms whatever it spends its steps on.
	EvalBytesPerStep = 64
	// maxIntDigits bounds integer literal length; u256 has 78 digits.
	maxIntDigits = 80
)

var maxU256 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))

// staticType is what the checker knows about a node without an environment.
type staticType uint8

const (
	tUnknown staticType = iota
	tBool
	tInt
	tString
	tList
	tTimestamp
)

func (t staticType) String() string {
	switch t {
	case tBool:
		return "bool"
	case tInt:
		return "int"
	case tString:
		return "string"
	case tList:
		return "list"
	case tTimestamp:
		return "timestamp"
	}
	return "unknown"
}

// Expr is a compiled expression, safe for concurrent use by many
// evaluations.
type Expr struct {
	src     string
	root    node
	timeExp bool
	idents  []string
	crons   int // CronSpan nodes, numbered 0..crons-1 (see cronSpanNode)
}

// Source returns the expression text as compiled.
func (e *Expr) Source() string { return e.src }

// Identifiers returns the free top-level identifiers the expression reads
// (e.g. "activity", "eth", "wallet"), sorted, without duplicates. An engine
// can use it to build only the parts of an environment a policy touches.
func (e *Expr) Identifiers() []string { return append([]string(nil), e.idents...) }

// Compile parses and checks a condition or consensus expression (also the
// language of MFA conditions and session-profile scopes). The time functions
// Timestamp and CronSpan and the keyword time are rejected.
func Compile(src string) (*Expr, error) { return compile(src, false) }

// CompileTime parses and checks a policy's `time` expression: Timestamp,
// CronSpan and time.now are available and no other identifier is.
func CompileTime(src string) (*Expr, error) { return compile(src, true) }

func compile(src string, timeExp bool) (*Expr, error) {
	if len(src) > MaxSourceLen {
		return nil, &SyntaxError{
			Pos:  0,
			Line: 1,
			Col:  1,
			Msg:  fmt.Sprintf("expression is %d bytes, longer than the limit of %d", len(src), MaxSourceLen),
		}
	}
	toks, serr := lex(src)
	if serr != nil {
		return nil, serr
	}
	p := &parser{src: src, toks: toks, timeExp: timeExp, free: map[string]bool{}}
	if toks[0].kind == tokEOF {
		return nil, p.errAt(0, "empty expression")
	}
	root, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.errAt(t.pos, "unexpected "+t.describe()+" after end of expression")
	}
	if ty := root.static(); ty != tBool && ty != tUnknown {
		return nil, p.errAt(root.span().start, "expression must be bool, found "+ty.String())
	}
	e := &Expr{src: src, root: root, timeExp: timeExp}
	for name := range p.free {
		e.idents = append(e.idents, name)
	}
	sort.Strings(e.idents)
	e.crons = p.crons
	return e, nil
}

type parser struct {
	src     string
	toks    []token
	i       int
	depth   int
	timeExp bool
	scopes  []string // bound predicate variables, innermost last
	free    map[string]bool
	crons   int // CronSpan nodes so far
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) errAt(pos int, msg string) *SyntaxError { return newSyntaxError(p.src, pos, msg) }

func (p *parser) expect(k tokenKind) (token, *SyntaxError) {
	t := p.peek()
	if t.kind != k {
		want := "'" + tokenText[k] + "'"
		if k == tokIdent {
			want = "an identifier"
		}
		return t, p.errAt(t.pos, fmt.Sprintf("expected %s but found %s", want, t.describe()))
	}
	return p.next(), nil
}

func (p *parser) enter(pos int) *SyntaxError {
	p.depth++
	if p.depth > MaxDepth {
		return p.errAt(pos, fmt.Sprintf("expression nested too deeply (limit %d)", MaxDepth))
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// expr := and ('||' and)*
func (p *parser) parseExpr() (node, *SyntaxError) {
	if err := p.enter(p.peek().pos); err != nil {
		return nil, err
	}
	defer p.leave()
	first, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tokOr {
		return first, nil
	}
	n := &logicNode{or: true, xs: []node{first}}
	if err := p.checkBoolOperand(first, p.peek()); err != nil {
		return nil, err
	}
	for p.peek().kind == tokOr {
		op := p.next()
		x, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		if err := p.checkBoolOperand(x, op); err != nil {
			return nil, err
		}
		n.xs = append(n.xs, x)
	}
	n.sp = span{first.span().start, n.xs[len(n.xs)-1].span().end}
	return n, nil
}

// and := cmp ('&&' cmp)*
func (p *parser) parseAnd() (node, *SyntaxError) {
	first, err := p.parseCmp()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tokAnd {
		return first, nil
	}
	n := &logicNode{xs: []node{first}}
	if err := p.checkBoolOperand(first, p.peek()); err != nil {
		return nil, err
	}
	for p.peek().kind == tokAnd {
		op := p.next()
		x, err := p.parseCmp()
		if err != nil {
			return nil, err
		}
		if err := p.checkBoolOperand(x, op); err != nil {
			return nil, err
		}
		n.xs = append(n.xs, x)
	}
	n.sp = span{first.span().start, n.xs[len(n.xs)-1].span().end}
	return n, nil
}

func (p *parser) checkBoolOperand(x node, op token) *SyntaxError {
	if t := x.static(); t != tBool && t != tUnknown {
		return p.errAt(x.span().start, fmt.Sprintf("operand of '%s' must be bool, found %s", tokenText[op.kind], t))
	}
	return nil
}

func cmpOp(k tokenKind) bool {
	switch k {
	case tokEq, tokNe, tokLt, tokLe, tokGt, tokGe:
		return true
	}
	return false
}

// cmp := unary [ ('=='|'!='|'<'|'<='|'>'|'>='|'in') unary ]
// Comparisons do not chain.
func (p *parser) parseCmp() (node, *SyntaxError) {
	l, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	isIn := t.kind == tokIdent && t.text == "in"
	if !cmpOp(t.kind) && !isIn {
		return l, nil
	}
	p.next()
	r, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	if nt := p.peek(); cmpOp(nt.kind) || (nt.kind == tokIdent && nt.text == "in") {
		return nil, p.errAt(nt.pos, "comparison operators do not chain; use parentheses and '&&'")
	}
	sp := span{l.span().start, r.span().end}
	if isIn {
		if rt := r.static(); rt != tList && rt != tUnknown {
			return nil, p.errAt(r.span().start, "right operand of 'in' must be a list, found "+rt.String())
		}
		if ll, ok := r.(*listNode); ok {
			if err := p.checkInElems(l, ll); err != nil {
				return nil, err
			}
		}
		return &inNode{sp: sp, x: l, list: r}, nil
	}
	n := &cmpNode{sp: sp, op: t.kind, l: l, r: r}
	if err := p.checkCmp(n, t); err != nil {
		return nil, err
	}
	return n, nil
}

// checkCmp rejects a comparison whose operand types can never be compared
// with its operator, as far as the checker can tell. An int and a string mix
// only through the quoted-decimal leniency; a string literal must then hold a
// decimal integer.
func (p *parser) checkCmp(n *cmpNode, op token) *SyntaxError {
	lt, rt := n.l.static(), n.r.static()
	if lt == tUnknown || rt == tUnknown {
		return nil
	}
	ordered := op.kind != tokEq && op.kind != tokNe
	bad := func() *SyntaxError {
		return p.errAt(op.pos, fmt.Sprintf("cannot compare %s with %s using '%s'", lt, rt, tokenText[op.kind]))
	}
	if lt == tList || rt == tList {
		return bad()
	}
	if lt == rt {
		if ordered && (lt == tBool || lt == tString) {
			return bad()
		}
		return nil
	}
	if mixedIntStringOK(n.l, n.r) {
		return nil
	}
	return bad()
}

func (p *parser) checkInElems(x node, l *listNode) *SyntaxError {
	xt := x.static()
	if xt == tUnknown {
		return nil
	}
	for _, e := range l.elems {
		et := e.static()
		if et == tUnknown || et == xt || mixedIntStringOK(x, e) {
			continue
		}
		return p.errAt(e.span().start, fmt.Sprintf("cannot compare %s with %s in 'in'", xt, et))
	}
	return nil
}

// mixedIntStringOK reports whether an int and a string may be compared: only
// through the quoted-decimal leniency, so a string literal must hold a
// decimal integer.
func mixedIntStringOK(a, b node) bool {
	at, bt := a.static(), b.static()
	if at == tString && bt == tInt {
		a, b, at, bt = b, a, bt, at
	}
	if at != tInt || bt != tString {
		return false
	}
	if lit, ok := b.(*litNode); ok {
		_, ok := parseDecimalInt(string(lit.v.(String)))
		return ok
	}
	return true
}

// unary := ('!' | '-') unary | postfix
func (p *parser) parseUnary() (node, *SyntaxError) {
	t := p.peek()
	if t.kind != tokNot && t.kind != tokMinus {
		return p.parsePostfix()
	}
	if err := p.enter(t.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	p.next()
	x, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	sp := span{t.pos, x.span().end}
	xt := x.static()
	if t.kind == tokNot {
		if xt != tBool && xt != tUnknown {
			return nil, p.errAt(x.span().start, "operand of '!' must be bool, found "+xt.String())
		}
		return &notNode{sp: sp, x: x}, nil
	}
	if xt != tInt && xt != tUnknown {
		return nil, p.errAt(x.span().start, "operand of '-' must be int, found "+xt.String())
	}
	if lit, ok := x.(*litNode); ok {
		return &litNode{sp: sp, v: lit.v.(Int).neg()}, nil
	}
	return &negNode{sp: sp, x: x}, nil
}

// postfix := primary ( '.' IDENT [ '(' args ')' ] | '[' expr [ '..' expr ] ']' )*
func (p *parser) parsePostfix() (node, *SyntaxError) {
	x, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	links := 0
	defer func() { p.depth -= links }()
	for {
		t := p.peek()
		if t.kind != tokDot && t.kind != tokLBracket {
			return x, nil
		}
		links++
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		p.next()
		if t.kind == tokDot {
			name, err := p.expect(tokIdent)
			if err != nil {
				return nil, err
			}
			if p.peek().kind == tokLParen {
				x, err = p.parseMethod(x, name)
				if err != nil {
					return nil, err
				}
				continue
			}
			if xt := x.static(); xt != tUnknown && !(xt == tList && name.text == "count") {
				return nil, p.errAt(name.pos, fmt.Sprintf("%s has no field '%s'", xt, name.text))
			}
			x = &fieldNode{sp: span{x.span().start, name.end}, x: x, name: name.text}
			continue
		}
		lo, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		xt := x.static()
		if xt != tUnknown && xt != tList && xt != tString {
			return nil, p.errAt(t.pos, "cannot index "+xt.String())
		}
		if p.peek().kind == tokDotDot {
			p.next()
			hi, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			end, err := p.expect(tokRBracket)
			if err != nil {
				return nil, err
			}
			for _, b := range []node{lo, hi} {
				if bt := b.static(); bt != tInt && bt != tUnknown {
					return nil, p.errAt(b.span().start, "slice bound must be int, found "+bt.String())
				}
			}
			x = &sliceNode{sp: span{x.span().start, end.end}, x: x, lo: lo, hi: hi}
			continue
		}
		end, err := p.expect(tokRBracket)
		if err != nil {
			return nil, err
		}
		it := lo.static()
		if (xt == tList || xt == tString) && it != tInt && it != tUnknown {
			return nil, p.errAt(lo.span().start, fmt.Sprintf("index of %s must be int, found %s", xt, it))
		}
		if it != tInt && it != tString && it != tUnknown {
			return nil, p.errAt(lo.span().start, "index must be int or string, found "+it.String())
		}
		x = &indexNode{sp: span{x.span().start, end.end}, x: x, idx: lo}
	}
}

func (p *parser) parseMethod(recv node, name token) (node, *SyntaxError) {
	p.next() // '('
	rt := recv.static()
	if rt != tUnknown && rt != tList {
		return nil, p.errAt(name.pos, fmt.Sprintf("%s has no method '%s'", rt, name.text))
	}
	switch name.text {
	case "count":
		end, err := p.expect(tokRParen)
		if err != nil {
			return nil, err
		}
		return &countNode{sp: span{recv.span().start, end.end}, x: recv}, nil
	case "contains":
		arg, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		end, err := p.expect(tokRParen)
		if err != nil {
			return nil, err
		}
		if ll, ok := recv.(*listNode); ok {
			if err := p.checkInElems(arg, ll); err != nil {
				return nil, err
			}
		}
		return &inNode{sp: span{recv.span().start, end.end}, x: arg, list: recv}, nil
	case "all", "any", "filter":
		v, err := p.expect(tokIdent)
		if err != nil {
			return nil, err
		}
		if isReserved(v.text) {
			return nil, p.errAt(v.pos, "cannot use '"+v.text+"' as a variable name")
		}
		if _, err := p.expect(tokComma); err != nil {
			return nil, err
		}
		p.scopes = append(p.scopes, v.text)
		slot := len(p.scopes) - 1
		pred, err := p.parseExpr()
		p.scopes = p.scopes[:len(p.scopes)-1]
		if err != nil {
			return nil, err
		}
		if pt := pred.static(); pt != tBool && pt != tUnknown {
			return nil, p.errAt(
				pred.span().start,
				fmt.Sprintf("predicate of '%s' must be bool, found %s", name.text, pt),
			)
		}
		end, err := p.expect(tokRParen)
		if err != nil {
			return nil, err
		}
		return &quantNode{sp: span{recv.span().start, end.end}, kind: name.text, x: recv, slot: slot, pred: pred}, nil
	}
	return nil, p.errAt(
		name.pos,
		fmt.Sprintf("unknown method '%s' (want all, any, filter, contains or count)", name.text),
	)
}

func isReserved(s string) bool { return s == "true" || s == "false" || s == "in" }

// primary := INT | STRING | 'true' | 'false' | IDENT | IDENT '(' args ')'
//
//	| '(' expr ')' | '[' [ expr (',' expr)* ] ']'
func (p *parser) parsePrimary() (node, *SyntaxError) {
	t := p.next()
	switch t.kind {
	case tokInt:
		i, _ := parseDecimalInt(t.text)
		if i.big != nil && i.big.CmpAbs(maxU256) > 0 {
			return nil, p.errAt(t.pos, "integer literal out of range (larger than u256)")
		}
		return &litNode{sp: span{t.pos, t.end}, v: i}, nil
	case tokString:
		return &litNode{sp: span{t.pos, t.end}, v: String(t.text)}, nil
	case tokLParen:
		x, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		end, err := p.expect(tokRParen)
		if err != nil {
			return nil, err
		}
		return &parenNode{sp: span{t.pos, end.end}, x: x}, nil
	case tokLBracket:
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		defer p.leave()
		l := &listNode{}
		if p.peek().kind != tokRBracket {
			for {
				e, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				if len(l.elems) == MaxListLiteral {
					return nil, p.errAt(
						e.span().start,
						fmt.Sprintf("list literal has more than %d elements", MaxListLiteral),
					)
				}
				l.elems = append(l.elems, e)
				if p.peek().kind != tokComma {
					break
				}
				p.next()
			}
		}
		end, err := p.expect(tokRBracket)
		if err != nil {
			return nil, err
		}
		l.sp = span{t.pos, end.end}
		konst := make(List, 0, len(l.elems))
		for _, e := range l.elems {
			if lit, ok := e.(*litNode); ok {
				konst = append(konst, lit.v)
			}
		}
		if len(konst) == len(l.elems) {
			l.konst = konst
		}
		return l, nil
	case tokIdent:
		switch t.text {
		case "true", "false":
			return &litNode{sp: span{t.pos, t.end}, v: Bool(t.text == "true")}, nil
		case "in":
			return nil, p.errAt(t.pos, "expected an operand but found 'in'")
		}
		if p.peek().kind == tokLParen {
			return p.parseFunction(t)
		}
		for i := len(p.scopes) - 1; i >= 0; i-- {
			if p.scopes[i] == t.text {
				return &varNode{sp: span{t.pos, t.end}, name: t.text, slot: i}, nil
			}
		}
		if t.text == "time" {
			if !p.timeExp {
				return nil, p.errAt(t.pos, "the keyword 'time' is only available in a policy's time field")
			}
			if p.peek().kind != tokDot || p.toks[p.i+1].kind != tokIdent || p.toks[p.i+1].text != "now" {
				return nil, p.errAt(t.pos, "expected 'time.now'")
			}
			p.next()
			now := p.next()
			if p.peek().kind == tokDot || p.peek().kind == tokLBracket {
				return nil, p.errAt(p.peek().pos, "time.now is a timestamp and has no fields")
			}
			p.free["time"] = true
			return &timeNowNode{sp: span{t.pos, now.end}}, nil
		}
		if p.timeExp {
			return nil, p.errAt(
				t.pos,
				fmt.Sprintf(
					"unknown identifier '%s' in a time expression (only time.now, Timestamp and CronSpan are available)",
					t.text,
				),
			)
		}
		p.free[t.text] = true
		return &identNode{sp: span{t.pos, t.end}, name: t.text}, nil
	}
	return nil, p.errAt(t.pos, "expected an operand but found "+t.describe())
}

// parseFunction parses Timestamp('...') and CronSpan('...', '...', '...').
// Their arguments must be string literals so they are validated when the
// policy is written.
func (p *parser) parseFunction(name token) (node, *SyntaxError) {
	want := 0
	switch name.text {
	case "Timestamp":
		want = 1
	case "CronSpan":
		want = 3
	default:
		return nil, p.errAt(name.pos, fmt.Sprintf("unknown function '%s'", name.text))
	}
	if !p.timeExp {
		return nil, p.errAt(name.pos, name.text+" is only available in a policy's time field")
	}
	p.next() // '('
	var args []token
	for {
		t := p.peek()
		if t.kind != tokString {
			return nil, p.errAt(
				t.pos,
				fmt.Sprintf("%s takes string literal arguments; found %s", name.text, t.describe()),
			)
		}
		args = append(args, p.next())
		if len(args) == want {
			break
		}
		if _, err := p.expect(tokComma); err != nil {
			return nil, err
		}
	}
	end, err := p.expect(tokRParen)
	if err != nil {
		if end.kind == tokComma {
			return nil, p.errAt(end.pos, fmt.Sprintf("%s takes %d argument(s)", name.text, want))
		}
		return nil, err
	}
	sp := span{name.pos, end.end}
	if name.text == "Timestamp" {
		ts, msg := parseTimestampLiteral(args[0].text)
		if msg != "" {
			return nil, p.errAt(args[0].pos, msg)
		}
		return &litNode{sp: sp, v: Timestamp(ts)}, nil
	}
	cs, argIdx, msg := parseCronSpan(args[0].text, args[1].text, args[2].text)
	if msg != "" {
		return nil, p.errAt(args[argIdx].pos, msg)
	}
	p.free["time"] = true // CronSpan reads time.now
	p.crons++
	return &cronSpanNode{sp: sp, spec: cs, idx: p.crons - 1}, nil
}

// parseTimestampLiteral parses RFC 3339 with a zero UTC offset only
// (Z, z, +00:00, -00:00).
func parseTimestampLiteral(s string) (time.Time, string) {
	norm := s
	if strings.HasSuffix(norm, "z") {
		norm = norm[:len(norm)-1] + "Z"
	}
	t, err := time.Parse(time.RFC3339Nano, norm)
	if err != nil {
		return time.Time{}, fmt.Sprintf("invalid RFC 3339 timestamp '%s'", s)
	}
	if _, off := t.Zone(); off != 0 {
		return time.Time{}, fmt.Sprintf("timestamp '%s' must have a zero UTC offset (Z or +00:00)", s)
	}
	return t.UTC(), ""
}
