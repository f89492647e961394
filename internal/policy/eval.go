package policy

import (
	"fmt"
	"time"
)

// ErrorKind classifies an evaluation error.
type ErrorKind string

const (
	// MissingField: an identifier, field, map key or value the expression
	// reads is absent or null (e.g. wallet.id when signing with a private
	// key). Turnkey documents this as making the whole policy an error.
	MissingField ErrorKind = "MissingField"
	// TypeError: an operator or method was applied to values of the wrong
	// types, or the expression did not produce a bool.
	TypeError ErrorKind = "TypeError"
	// IndexOutOfRange: an index or slice bound is outside the list or string.
	IndexOutOfRange ErrorKind = "IndexOutOfRange"
	// LimitExceeded: the evaluation did more than MaxEvalSteps units of work
	// (node visits and bytes of string work, EvalBytesPerStep to a step).
	LimitExceeded ErrorKind = "LimitExceeded"
	// EnvError: a lazy value of the environment failed to compute.
	EnvError ErrorKind = "EnvError"
	// Internal: a bug; the evaluator recovered from a panic.
	Internal ErrorKind = "Internal"
)

// EvalError is an evaluation error. Path is the source text of the
// sub-expression at fault (e.g. "wallet.id", "eth.tx.data[0..10]"); Pos is
// its byte offset in the source.
type EvalError struct {
	Kind ErrorKind
	Path string
	Msg  string
	Pos  int
	Err  error // the cause of an EnvError
}

func (e *EvalError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", e.Kind, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Kind, e.Path, e.Msg)
}

func (e *EvalError) Unwrap() error { return e.Err }

// Eval evaluates the expression against env. It returns an error when the
// expression touches anything absent, mixes types, indexes out of range, or
// does not produce a bool. A nil env is an empty environment.
func (e *Expr) Eval(env Env) (result bool, err error) {
	result, _, err = e.evalSteps(env)
	return result, err
}

// evalSteps is Eval that also says how many steps the evaluation took (for tests).
func (e *Expr) evalSteps(env Env) (result bool, steps int, err error) {
	if env == nil {
		env = emptyEnv{}
	}
	ev := evaluator{src: e.src, env: env, crons: e.crons}
	defer func() {
		steps = ev.steps
		if r := recover(); r != nil {
			result, err = false, &EvalError{Kind: Internal, Msg: fmt.Sprint("panic: ", r)}
		}
	}()
	v, err := e.root.eval(&ev)
	if err != nil {
		return false, ev.steps, err
	}
	b, ok := v.(Bool)
	if !ok {
		return false, ev.steps, ev.errf(TypeError, e.root, "expression produced %s, want bool", v.typeName())
	}
	return bool(b), ev.steps, nil
}

type evaluator struct {
	src   string
	env   Env
	vars  []Value
	steps int
	// strs holds the strings indexed by character so far (strindex.go), nextStr the entry to
	// replace next.
	strs    [strCacheSize]strIndex
	nextStr int
	// crons is the number of CronSpan nodes; cron[i] is 1 + the result of CronSpan i once
	// computed (time.now does not change during an evaluation), 0 before.
	crons int
	cron  []int8
}

func (ev *evaluator) errf(kind ErrorKind, n node, format string, args ...any) *EvalError {
	sp := n.span()
	return &EvalError{Kind: kind, Path: ev.src[sp.start:sp.end], Pos: sp.start, Msg: fmt.Sprintf(format, args...)}
}

func (ev *evaluator) step(n node, cost int) error {
	ev.steps += cost
	if ev.steps > MaxEvalSteps {
		return ev.errf(LimitExceeded, n, "evaluation exceeded %d steps", MaxEvalSteps)
	}
	return nil
}

// charge counts the steps of an operation about to scan, compare, hash or copy bytes of string:
// one per EvalBytesPerStep (the node visit that does it is a step of its own). It is called before
// the work, so a policy over the budget stops before doing it.
func (ev *evaluator) charge(n node, bytes int) error {
	if bytes < EvalBytesPerStep {
		return nil
	}
	return ev.step(n, bytes/EvalBytesPerStep)
}

// resolve forces a lazy value and turns null into MissingField; every value
// taken out of the environment or a container goes through it.
func (ev *evaluator) resolve(v Value, n node) (Value, error) {
	if l, ok := v.(*lazyValue); ok {
		fv, err := l.force()
		if err != nil {
			e := ev.errf(EnvError, n, "computing value: %v", err)
			e.Err = err
			return nil, e
		}
		v = fv
	}
	switch v.(type) {
	case Null:
		return nil, ev.errf(MissingField, n, "value is absent")
	case nil:
		return nil, ev.errf(MissingField, n, "value is absent")
	case *lazyValue:
		return nil, ev.errf(EnvError, n, "lazy value produced another lazy value")
	}
	return v, nil
}

type span struct{ start, end int }

type node interface {
	span() span
	static() staticType
	eval(ev *evaluator) (Value, error)
}

type litNode struct {
	sp span
	v  Value
}

func (n *litNode) span() span { return n.sp }
func (n *litNode) static() staticType {
	switch n.v.(type) {
	case Bool:
		return tBool
	case Int:
		return tInt
	case String:
		return tString
	case Timestamp:
		return tTimestamp
	}
	return tUnknown
}
func (n *litNode) eval(ev *evaluator) (Value, error) { return n.v, ev.step(n, 1) }

type parenNode struct {
	sp span
	x  node
}

func (n *parenNode) span() span                        { return n.sp }
func (n *parenNode) static() staticType                { return n.x.static() }
func (n *parenNode) eval(ev *evaluator) (Value, error) { return n.x.eval(ev) }

type listNode struct {
	sp    span
	elems []node
	konst List // precomputed when every element is a literal
}

func (n *listNode) span() span         { return n.sp }
func (n *listNode) static() staticType { return tList }
func (n *listNode) eval(ev *evaluator) (Value, error) {
	if n.konst != nil {
		return n.konst, ev.step(n, 1+len(n.konst))
	}
	if err := ev.step(n, 1); err != nil {
		return nil, err
	}
	l := make(List, len(n.elems))
	for i, e := range n.elems {
		v, err := e.eval(ev)
		if err != nil {
			return nil, err
		}
		l[i] = v
	}
	return l, nil
}

type identNode struct {
	sp   span
	name string
}

func (n *identNode) span() span         { return n.sp }
func (n *identNode) static() staticType { return tUnknown }
func (n *identNode) eval(ev *evaluator) (Value, error) {
	if err := ev.step(n, 1); err != nil {
		return nil, err
	}
	if err := ev.charge(n, len(n.name)); err != nil { // the lookup hashes the name
		return nil, err
	}
	v, ok := ev.env.Lookup(n.name)
	if !ok {
		return nil, ev.errf(MissingField, n, "'%s' is not available for this request", n.name)
	}
	return ev.resolve(v, n)
}

type varNode struct {
	sp   span
	name string
	slot int
}

func (n *varNode) span() span         { return n.sp }
func (n *varNode) static() staticType { return tUnknown }
func (n *varNode) eval(ev *evaluator) (Value, error) {
	if err := ev.step(n, 1); err != nil {
		return nil, err
	}
	return ev.vars[n.slot], nil
}

type timeNowNode struct{ sp span }

func (n *timeNowNode) span() span         { return n.sp }
func (n *timeNowNode) static() staticType { return tTimestamp }
func (n *timeNowNode) eval(ev *evaluator) (Value, error) {
	if err := ev.step(n, 1); err != nil {
		return nil, err
	}
	t, err := ev.now(n)
	if err != nil {
		return nil, err
	}
	return Timestamp(t), nil
}

// now reads time.now from the environment.
func (ev *evaluator) now(n node) (time.Time, error) {
	v, ok := ev.env.Lookup("time")
	if !ok {
		return time.Time{}, &EvalError{
			Kind: MissingField,
			Path: "time.now",
			Pos:  n.span().start,
			Msg:  "the trusted time is not available",
		}
	}
	v, err := ev.resolve(v, n)
	if err != nil {
		return time.Time{}, err
	}
	m, ok := v.(Map)
	if !ok {
		return time.Time{}, ev.errf(TypeError, n, "time is %s, want struct", v.typeName())
	}
	now, ok := m["now"]
	if !ok {
		return time.Time{}, &EvalError{
			Kind: MissingField,
			Path: "time.now",
			Pos:  n.span().start,
			Msg:  "the trusted time is not available",
		}
	}
	now, err = ev.resolve(now, n)
	if err != nil {
		return time.Time{}, err
	}
	ts, ok := now.(Timestamp)
	if !ok {
		return time.Time{}, ev.errf(TypeError, n, "time.now is %s, want timestamp", now.typeName())
	}
	return time.Time(ts), nil
}

type fieldNode struct {
	sp   span
	x    node
	name string
}

func (n *fieldNode) span() span         { return n.sp }
func (n *fieldNode) static() staticType { return tUnknown }
func (n *fieldNode) eval(ev *evaluator) (Value, error) {
	x, err := n.x.eval(ev)
	if err != nil {
		return nil, err
	}
	if err := ev.step(n, 1); err != nil {
		return nil, err
	}
	switch xv := x.(type) {
	case Map:
		if err := ev.charge(n, len(n.name)); err != nil {
			return nil, err
		}
		v, ok := xv[n.name]
		if !ok {
			return nil, ev.errf(MissingField, n, "no field '%s'", n.name)
		}
		return ev.resolve(v, n)
	case List:
		if n.name == "count" { // leniency: `.count` without parentheses
			return IntOf(int64(len(xv))), nil
		}
	}
	return nil, ev.errf(TypeError, n, "%s has no field '%s'", x.typeName(), n.name)
}

type indexNode struct {
	sp  span
	x   node
	idx node
}

func (n *indexNode) span() span { return n.sp }
func (n *indexNode) static() staticType {
	if n.x.static() == tString {
		return tString
	}
	return tUnknown
}
func (n *indexNode) eval(ev *evaluator) (Value, error) {
	x, err := n.x.eval(ev)
	if err != nil {
		return nil, err
	}
	idx, err := n.idx.eval(ev)
	if err != nil {
		return nil, err
	}
	if err := ev.step(n, 1); err != nil {
		return nil, err
	}
	switch xv := x.(type) {
	case Map:
		k, ok := idx.(String)
		if !ok {
			return nil, ev.errf(TypeError, n, "map key must be string, found %s", idx.typeName())
		}
		if err := ev.charge(n, len(k)); err != nil {
			return nil, err
		}
		v, ok := xv[string(k)]
		if !ok {
			return nil, ev.errf(MissingField, n, "no key '%s'", abbreviate(string(k)))
		}
		return ev.resolve(v, n)
	case List:
		i, err := ev.index(n, idx, len(xv))
		if err != nil {
			return nil, err
		}
		return ev.resolve(xv[i], n)
	case String:
		sx, err := ev.strIndexOf(n, string(xv))
		if err != nil {
			return nil, err
		}
		i, err := ev.index(n, idx, sx.runes)
		if err != nil {
			return nil, err
		}
		return String(sx.slice(i, i+1)), nil
	}
	return nil, ev.errf(TypeError, n, "cannot index %s", x.typeName())
}

// index checks that v is an int in [0, length).
func (ev *evaluator) index(n node, v Value, length int) (int, error) {
	i, ok := v.(Int)
	if !ok {
		return 0, ev.errf(TypeError, n, "index must be int, found %s", v.typeName())
	}
	small, fits := i.Int64()
	if !fits || small < 0 || small >= int64(length) {
		return 0, ev.errf(IndexOutOfRange, n, "index %s out of range [0, %d)", i, length)
	}
	return int(small), nil
}

type sliceNode struct {
	sp     span
	x      node
	lo, hi node
}

func (n *sliceNode) span() span { return n.sp }
func (n *sliceNode) static() staticType {
	if t := n.x.static(); t == tList || t == tString {
		return t
	}
	return tUnknown
}
func (n *sliceNode) eval(ev *evaluator) (Value, error) {
	x, err := n.x.eval(ev)
	if err != nil {
		return nil, err
	}
	lov, err := n.lo.eval(ev)
	if err != nil {
		return nil, err
	}
	hiv, err := n.hi.eval(ev)
	if err != nil {
		return nil, err
	}
	if err := ev.step(n, 1); err != nil {
		return nil, err
	}
	switch xv := x.(type) {
	case List:
		lo, hi, err := ev.bounds(n, lov, hiv, len(xv))
		if err != nil {
			return nil, err
		}
		return xv[lo:hi:hi], nil
	case String:
		sx, err := ev.strIndexOf(n, string(xv))
		if err != nil {
			return nil, err
		}
		lo, hi, err := ev.bounds(n, lov, hiv, sx.runes)
		if err != nil {
			return nil, err
		}
		if !sx.valid { // the slice is converted (up to 3 bytes out per byte in), not shared
			if err := ev.charge(n, 3*(sx.offset(hi)-sx.offset(lo))); err != nil {
				return nil, err
			}
		}
		return String(sx.slice(lo, hi)), nil
	}
	return nil, ev.errf(TypeError, n, "cannot slice %s", x.typeName())
}

func (ev *evaluator) bounds(n node, lov, hiv Value, length int) (int, int, error) {
	lo, ok1 := lov.(Int)
	hi, ok2 := hiv.(Int)
	if !ok1 || !ok2 {
		return 0, 0, ev.errf(TypeError, n, "slice bounds must be int, found %s and %s", lov.typeName(), hiv.typeName())
	}
	l, f1 := lo.Int64()
	h, f2 := hi.Int64()
	if !f1 || !f2 || l < 0 || h < l || h > int64(length) {
		return 0, 0, ev.errf(IndexOutOfRange, n, "slice [%s..%s] out of range for length %d", lo, hi, length)
	}
	return int(l), int(h), nil
}

type notNode struct {
	sp span
	x  node
}

func (n *notNode) span() span         { return n.sp }
func (n *notNode) static() staticType { return tBool }
func (n *notNode) eval(ev *evaluator) (Value, error) {
	x, err := n.x.eval(ev)
	if err != nil {
		return nil, err
	}
	b, ok := x.(Bool)
	if !ok {
		return nil, ev.errf(TypeError, n, "operand of '!' must be bool, found %s", x.typeName())
	}
	return !b, ev.step(n, 1)
}

type negNode struct {
	sp span
	x  node
}

func (n *negNode) span() span         { return n.sp }
func (n *negNode) static() staticType { return tInt }
func (n *negNode) eval(ev *evaluator) (Value, error) {
	x, err := n.x.eval(ev)
	if err != nil {
		return nil, err
	}
	i, ok := x.(Int)
	if !ok {
		return nil, ev.errf(TypeError, n, "operand of '-' must be int, found %s", x.typeName())
	}
	return i.neg(), ev.step(n, 1)
}

// logicNode is an n-ary && or ||. Every operand is evaluated (no
// short-circuit), so an error anywhere is the result.
type logicNode struct {
	sp span
	or bool
	xs []node
}

func (n *logicNode) span() span         { return n.sp }
func (n *logicNode) static() staticType { return tBool }
func (n *logicNode) eval(ev *evaluator) (Value, error) {
	acc := !n.or
	for _, x := range n.xs {
		v, err := x.eval(ev)
		if err != nil {
			return nil, err
		}
		b, ok := v.(Bool)
		if !ok {
			op := "&&"
			if n.or {
				op = "||"
			}
			return nil, ev.errf(TypeError, x, "operand of '%s' must be bool, found %s", op, v.typeName())
		}
		if n.or {
			acc = acc || bool(b)
		} else {
			acc = acc && bool(b)
		}
	}
	return Bool(acc), ev.step(n, 1)
}

type cmpNode struct {
	sp   span
	op   tokenKind
	l, r node
}

func (n *cmpNode) span() span         { return n.sp }
func (n *cmpNode) static() staticType { return tBool }
func (n *cmpNode) eval(ev *evaluator) (Value, error) {
	l, err := n.l.eval(ev)
	if err != nil {
		return nil, err
	}
	r, err := n.r.eval(ev)
	if err != nil {
		return nil, err
	}
	if err := ev.step(n, 1); err != nil {
		return nil, err
	}
	switch n.op {
	case tokEq, tokNe:
		if err := ev.charge(n, compareCost(l, r)); err != nil {
			return nil, err
		}
		eq, ok := equal(l, r)
		if !ok {
			return nil, ev.errf(TypeError, n, "cannot compare %s with %s", describeValue(l), describeValue(r))
		}
		return Bool(eq == (n.op == tokEq)), nil
	}
	c, ok := order(l, r)
	if !ok {
		return nil, ev.errf(
			TypeError,
			n,
			"cannot order %s and %s with '%s'",
			describeValue(l),
			describeValue(r),
			tokenText[n.op],
		)
	}
	switch n.op {
	case tokLt:
		return Bool(c < 0), nil
	case tokLe:
		return Bool(c <= 0), nil
	case tokGt:
		return Bool(c > 0), nil
	}
	return Bool(c >= 0), nil
}

func describeValue(v Value) string {
	switch x := v.(type) {
	case String:
		if len(x)+2 > 40 { // what Format would give, cut at 40 bytes, without copying all of x
			return "string '" + string(x[:39]) + "..."
		}
		return "string " + Format(v)
	case Int, Bool:
		s := Format(v)
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return v.typeName() + " " + s
	}
	return v.typeName()
}

// compareCost is the bytes == reads to compare a and b: two strings of the same length are
// compared byte by byte (strings of different lengths, and other values, in constant time).
func compareCost(a, b Value) int {
	x, ok := a.(String)
	if !ok {
		return 0
	}
	if y, ok := b.(String); ok && len(x) == len(y) {
		return len(x)
	}
	return 0
}

// equal compares two values of the same scalar type. An int and a string
// holding a decimal integer compare numerically (docs leniency). Lists and
// maps are not comparable.
func equal(a, b Value) (bool, bool) {
	switch x := a.(type) {
	case Bool:
		if y, ok := b.(Bool); ok {
			return x == y, true
		}
	case String:
		switch y := b.(type) {
		case String:
			return x == y, true
		case Int:
			if xi, ok := parseDecimalInt(string(x)); ok {
				return xi.Cmp(y) == 0, true
			}
		}
	case Int:
		switch y := b.(type) {
		case Int:
			return x.Cmp(y) == 0, true
		case String:
			if yi, ok := parseDecimalInt(string(y)); ok {
				return x.Cmp(yi) == 0, true
			}
		}
	case Timestamp:
		if y, ok := b.(Timestamp); ok {
			return time.Time(x).Equal(time.Time(y)), true
		}
	}
	return false, false
}

// order compares ints (with the quoted-decimal leniency) and timestamps.
func order(a, b Value) (int, bool) {
	switch x := a.(type) {
	case Int:
		switch y := b.(type) {
		case Int:
			return x.Cmp(y), true
		case String:
			if yi, ok := parseDecimalInt(string(y)); ok {
				return x.Cmp(yi), true
			}
		}
	case String:
		if y, ok := b.(Int); ok {
			if xi, ok := parseDecimalInt(string(x)); ok {
				return xi.Cmp(y), true
			}
		}
	case Timestamp:
		if y, ok := b.(Timestamp); ok {
			return time.Time(x).Compare(time.Time(y)), true
		}
	}
	return 0, false
}

// inNode is `x in list` and `list.contains(x)`.
type inNode struct {
	sp   span
	x    node
	list node
}

func (n *inNode) span() span         { return n.sp }
func (n *inNode) static() staticType { return tBool }
func (n *inNode) eval(ev *evaluator) (Value, error) {
	var x, lv Value
	var err error
	// Evaluate in source order: `x in l` reads x first, `l.contains(x)` l first.
	if n.x.span().start < n.list.span().start {
		if x, err = n.x.eval(ev); err == nil {
			lv, err = n.list.eval(ev)
		}
	} else {
		if lv, err = n.list.eval(ev); err == nil {
			x, err = n.x.eval(ev)
		}
	}
	if err != nil {
		return nil, err
	}
	l, ok := lv.(List)
	if !ok {
		return nil, ev.errf(TypeError, n.list, "%s is not a list", lv.typeName())
	}
	if err := ev.step(n, 1+len(l)); err != nil {
		return nil, err
	}
	found := false
	for _, e := range l {
		e, err := ev.resolve(e, n.list)
		if err != nil {
			return nil, err
		}
		if err := ev.charge(n, compareCost(x, e)); err != nil {
			return nil, err
		}
		eq, ok := equal(x, e)
		if !ok {
			return nil, ev.errf(
				TypeError,
				n,
				"cannot compare %s with list element %s",
				describeValue(x),
				describeValue(e),
			)
		}
		found = found || eq
	}
	return Bool(found), nil
}

type countNode struct {
	sp span
	x  node
}

func (n *countNode) span() span         { return n.sp }
func (n *countNode) static() staticType { return tInt }
func (n *countNode) eval(ev *evaluator) (Value, error) {
	x, err := n.x.eval(ev)
	if err != nil {
		return nil, err
	}
	l, ok := x.(List)
	if !ok {
		return nil, ev.errf(TypeError, n, "count() needs a list, found %s", x.typeName())
	}
	return IntOf(int64(len(l))), ev.step(n, 1)
}

// quantNode is all/any/filter. The predicate runs on every element, with no
// early exit, so an error on any element is the result.
type quantNode struct {
	sp   span
	kind string // "all", "any", "filter"
	x    node
	slot int
	pred node
}

func (n *quantNode) span() span { return n.sp }
func (n *quantNode) static() staticType {
	if n.kind == "filter" {
		return tList
	}
	return tBool
}
func (n *quantNode) eval(ev *evaluator) (Value, error) {
	x, err := n.x.eval(ev)
	if err != nil {
		return nil, err
	}
	l, ok := x.(List)
	if !ok {
		return nil, ev.errf(TypeError, n, "%s() needs a list, found %s", n.kind, x.typeName())
	}
	if err := ev.step(n, 1); err != nil {
		return nil, err
	}
	for len(ev.vars) <= n.slot {
		ev.vars = append(ev.vars, nil)
	}
	all, anyTrue := true, false
	var kept List
	for _, e := range l {
		e, err := ev.resolve(e, n.x)
		if err != nil {
			return nil, err
		}
		ev.vars[n.slot] = e
		v, err := n.pred.eval(ev)
		if err != nil {
			return nil, err
		}
		b, ok := v.(Bool)
		if !ok {
			return nil, ev.errf(TypeError, n.pred, "predicate of %s() produced %s, want bool", n.kind, v.typeName())
		}
		all = all && bool(b)
		anyTrue = anyTrue || bool(b)
		if b && n.kind == "filter" {
			kept = append(kept, e)
		}
	}
	ev.vars[n.slot] = nil
	switch n.kind {
	case "all":
		return Bool(all), nil
	case "any":
		return Bool(anyTrue), nil
	}
	if kept == nil {
		kept = List{}
	}
	return kept, nil
}

type cronSpanNode struct {
	sp   span
	spec *cronSpan
	idx  int // its number in the expression, for the evaluator's cache
}

// cronSpanSteps is what computing one CronSpan costs, in steps: it walks up to a week of
// candidate minutes and resolves a few hundred wall-clock times (about 15 µs, 1,500 node visits).
// It is paid once per CronSpan and evaluation; later visits read the cached result.
const cronSpanSteps = 2048

func (n *cronSpanNode) span() span         { return n.sp }
func (n *cronSpanNode) static() staticType { return tBool }
func (n *cronSpanNode) eval(ev *evaluator) (Value, error) {
	if err := ev.step(n, 1); err != nil {
		return nil, err
	}
	if ev.cron == nil {
		ev.cron = make([]int8, ev.crons)
	}
	if n.idx < len(ev.cron) && ev.cron[n.idx] != 0 {
		return Bool(ev.cron[n.idx] == 2), nil
	}
	now, err := ev.now(n)
	if err != nil {
		return nil, err
	}
	if err := ev.step(n, cronSpanSteps); err != nil {
		return nil, err
	}
	active := n.spec.active(now)
	if n.idx < len(ev.cron) {
		ev.cron[n.idx] = 1
		if active {
			ev.cron[n.idx] = 2
		}
	}
	return Bool(active), nil
}
