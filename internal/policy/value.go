package policy

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Value is a policy-language value. The set of implementations is closed:
// Bool, Int, String, List, Map, Null, Timestamp, and lazy values made by
// Lazy. Struct-like values (User, Wallet, eth.tx, ...) are Maps whose keys are
// the field names.
type Value interface {
	typeName() string
}

// Bool is a boolean value.
type Bool bool

// String is a string value.
type String string

// List is an ordered list of values.
type List []Value

// Map is a map or struct value with string keys. Both `m.key` and `m['key']`
// read it.
type Map map[string]Value

// Null is the value of an explicit JSON null or of a Go nil. Reading it in an
// expression is a MissingField error, as an absent Option is in Turnkey.
type Null struct{}

// Timestamp is a point in time; it exists only in the time language
// (time.now and Timestamp('...')).
type Timestamp time.Time

// Int is an arbitrary-precision integer. Values that fit in an int64 avoid
// allocating a big.Int.
type Int struct {
	small int64
	big   *big.Int // nil when the value fits in small
}

func (Bool) typeName() string      { return "bool" }
func (String) typeName() string    { return "string" }
func (List) typeName() string      { return "list" }
func (Map) typeName() string       { return "struct" }
func (Null) typeName() string      { return "null" }
func (Timestamp) typeName() string { return "timestamp" }
func (Int) typeName() string       { return "int" }

// IntOf returns the Int holding i.
func IntOf(i int64) Int { return Int{small: i} }

// BigInt returns the Int holding a copy of b.
func BigInt(b *big.Int) Int {
	if b.IsInt64() {
		return Int{small: b.Int64()}
	}
	return Int{big: new(big.Int).Set(b)}
}

// Big returns the value as a new big.Int.
func (i Int) Big() *big.Int {
	if i.big != nil {
		return new(big.Int).Set(i.big)
	}
	return big.NewInt(i.small)
}

// Int64 returns the value and whether it fits in an int64.
func (i Int) Int64() (int64, bool) {
	if i.big != nil {
		return 0, false
	}
	return i.small, true
}

// String renders the integer in decimal.
func (i Int) String() string {
	if i.big != nil {
		return i.big.String()
	}
	return strconv.FormatInt(i.small, 10)
}

// Cmp compares i and j and returns -1, 0 or +1.
func (i Int) Cmp(j Int) int {
	if i.big == nil && j.big == nil {
		switch {
		case i.small < j.small:
			return -1
		case i.small > j.small:
			return 1
		}
		return 0
	}
	return i.bigRef().Cmp(j.bigRef())
}

// bigRef is the value as a big.Int that the caller must not modify (no copy when it is big).
func (i Int) bigRef() *big.Int {
	if i.big != nil {
		return i.big
	}
	return big.NewInt(i.small)
}

func (i Int) neg() Int {
	if i.big == nil && i.small != math.MinInt64 {
		return Int{small: -i.small}
	}
	r := new(big.Int).Neg(i.bigRef())
	if r.IsInt64() {
		return Int{small: r.Int64()}
	}
	return Int{big: r}
}

// parseDecimalInt parses a decimal integer: an optional '-' and digits,
// nothing else. It reads integer literals and implements the
// number-vs-quoted-string leniency.
func parseDecimalInt(s string) (Int, bool) {
	if s == "" || len(s) > maxIntDigits+1 {
		return Int{}, false
	}
	digits := s
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if digits == "" {
		return Int{}, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return Int{}, false
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return Int{small: n}, true
	}
	b, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return Int{}, false
	}
	return Int{big: b}, true
}

// lazyValue defers computing a value until an expression first reads it.
type lazyValue struct {
	once sync.Once
	fn   func() (Value, error)
	v    Value
	err  error
}

func (*lazyValue) typeName() string { return "lazy" }

func (l *lazyValue) force() (Value, error) {
	l.once.Do(func() {
		v, err := l.fn()
		if err == nil && v == nil {
			v = Null{}
		}
		l.v, l.err = v, err
		l.fn = nil
	})
	return l.v, l.err
}

// Lazy returns a value computed by fn on first access (for example eth.tx,
// parsed only when a policy touches it). The result, or the error, is cached;
// concurrent evaluations share one call. An error from fn makes the reading
// expression fail with an EvalError of kind EnvError.
func Lazy(fn func() (Value, error)) Value {
	return &lazyValue{fn: fn}
}

// Env supplies the top-level identifiers of an expression (activity,
// approvers, eth, time, ...).
type Env interface {
	Lookup(name string) (Value, bool)
}

// MapEnv is an Env backed by a Go map; values are converted with FromGo on
// each lookup, so store Values in it (FromGo returns those unchanged) when the
// same environment is evaluated many times.
type MapEnv map[string]any

// Lookup implements Env.
func (m MapEnv) Lookup(name string) (Value, bool) {
	v, ok := m[name]
	if !ok {
		return nil, false
	}
	return FromGo(v), true
}

// ValueEnv is an Env backed by already-converted values.
type ValueEnv map[string]Value

// Lookup implements Env.
func (m ValueEnv) Lookup(name string) (Value, bool) {
	v, ok := m[name]
	return v, ok
}

// TimeEnv returns the environment of the time field: the keyword time.now.
func TimeEnv(now time.Time) Env {
	return ValueEnv{"time": Map{"now": Timestamp(now)}}
}

type emptyEnv struct{}

func (emptyEnv) Lookup(string) (Value, bool) { return nil, false }

// FromGo converts a Go value into a Value:
//   - Value: returned unchanged (so lazy values and pre-built maps pass through);
//   - nil: Null;
//   - bool, string: Bool, String;
//   - all Go integer types, *big.Int, big.Int: Int;
//   - json.Number: Int when it is an integer, otherwise String of its text;
//   - float32/float64 (from encoding/json without UseNumber): Int when integral
//     and exactly representable, otherwise String of its decimal text;
//   - time.Time: Timestamp;
//   - []T and [N]T: List; map[string]T: Map.
//
// Anything else becomes Null, so a misbuilt environment fails closed with
// MissingField instead of matching.
func FromGo(v any) Value {
	switch x := v.(type) {
	case nil:
		return Null{}
	case Value:
		return x
	case bool:
		return Bool(x)
	case string:
		return String(x)
	case int:
		return IntOf(int64(x))
	case int8:
		return IntOf(int64(x))
	case int16:
		return IntOf(int64(x))
	case int32:
		return IntOf(int64(x))
	case int64:
		return IntOf(x)
	case uint:
		return fromUint64(uint64(x))
	case uint8:
		return IntOf(int64(x))
	case uint16:
		return IntOf(int64(x))
	case uint32:
		return IntOf(int64(x))
	case uint64:
		return fromUint64(x)
	case *big.Int:
		if x == nil {
			return Null{}
		}
		return BigInt(x)
	case big.Int:
		return BigInt(&x)
	case json.Number:
		if i, ok := parseDecimalInt(string(x)); ok {
			return i
		}
		return String(string(x))
	case float64:
		return fromFloat(x)
	case float32:
		return fromFloat(float64(x))
	case time.Time:
		return Timestamp(x)
	case []any:
		l := make(List, len(x))
		for i, e := range x {
			l[i] = FromGo(e)
		}
		return l
	case []string:
		l := make(List, len(x))
		for i, e := range x {
			l[i] = String(e)
		}
		return l
	case map[string]any:
		m := make(Map, len(x))
		for k, e := range x {
			m[k] = FromGo(e)
		}
		return m
	case map[string]string:
		m := make(Map, len(x))
		for k, e := range x {
			m[k] = String(e)
		}
		return m
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return Null{}
		}
		l := make(List, rv.Len())
		for i := range l {
			l[i] = FromGo(rv.Index(i).Interface())
		}
		return l
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return Null{}
		}
		if rv.IsNil() {
			return Null{}
		}
		m := make(Map, rv.Len())
		iter := rv.MapRange()
		for iter.Next() {
			m[iter.Key().String()] = FromGo(iter.Value().Interface())
		}
		return m
	case reflect.Pointer:
		if rv.IsNil() {
			return Null{}
		}
		return FromGo(rv.Elem().Interface())
	}
	return Null{}
}

func fromUint64(u uint64) Value {
	if u <= math.MaxInt64 {
		return IntOf(int64(u))
	}
	return BigInt(new(big.Int).SetUint64(u))
}

func fromFloat(f float64) Value {
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return IntOf(int64(f))
	}
	return String(strconv.FormatFloat(f, 'f', -1, 64))
}

// ToGo converts a Value back to plain Go values (bool, string, *big.Int,
// []any, map[string]any, time.Time, nil). Lazy values are forced; an error
// while forcing yields nil in its place.
func ToGo(v Value) any {
	switch x := v.(type) {
	case Bool:
		return bool(x)
	case String:
		return string(x)
	case Int:
		return x.Big()
	case List:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ToGo(e)
		}
		return out
	case Map:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = ToGo(e)
		}
		return out
	case Timestamp:
		return time.Time(x)
	case *lazyValue:
		fv, err := x.force()
		if err != nil {
			return nil
		}
		return ToGo(fv)
	}
	return nil
}

// Format renders a value for messages and tests (policy-language-like syntax).
func Format(v Value) string {
	var b strings.Builder
	formatTo(&b, v, 0)
	return b.String()
}

func formatTo(b *strings.Builder, v Value, depth int) {
	if depth > 8 {
		b.WriteString("...")
		return
	}
	switch x := v.(type) {
	case Bool:
		b.WriteString(strconv.FormatBool(bool(x)))
	case String:
		b.WriteByte('\'')
		b.WriteString(string(x))
		b.WriteByte('\'')
	case Int:
		b.WriteString(x.String())
	case List:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			formatTo(b, e, depth+1)
		}
		b.WriteByte(']')
	case Map:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k)
			b.WriteString(": ")
			formatTo(b, x[k], depth+1)
		}
		b.WriteByte('}')
	case Timestamp:
		b.WriteString("Timestamp('")
		b.WriteString(time.Time(x).UTC().Format(time.RFC3339Nano))
		b.WriteString("')")
	case Null:
		b.WriteString("null")
	case *lazyValue:
		b.WriteString("<lazy>")
	default:
		b.WriteString("<nil>")
	}
}
