package activity

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/wire"
)

// The functions of an Operation (Execute, Prepare, SelfUser, PolicyEnv, Redact) are typed: each
// carries the intent types it accepts, and is only made by the adapters below (On, OnAny,
// Versions, User, Env, Redactor and their *Any forms), whose type parameter is the handler's own
// parameter type. Registering an operation checks that every activity type version of its path
// decodes to an accepted type (Registry.Submit panics at start-up otherwise), and a call with any
// other type is refused as an internal error: no handler type-asserts its intent, so no intent
// can make one panic.
type typed struct{ types []reflect.Type }

func (t typed) accepts(intent any) bool { return slices.Contains(t.types, reflect.TypeOf(intent)) }

// ExecFn is an Execute or Prepare function (made by On, OnAny or Versions).
type ExecFn struct {
	typed
	fn func(x *Exec, intent any) (any, error)
}

func (f ExecFn) set() bool { return f.fn != nil }

func (f ExecFn) call(x *Exec, intent any) (any, error) {
	if !f.accepts(intent) {
		return nil, apierr.Internalf(nil, "no handler for intent type %T", intent)
	}
	return f.fn(x, intent)
}

// On adapts a handler of one intent type (one activity type version).
func On[T any](fn func(x *Exec, in *T) (any, error)) ExecFn {
	return ExecFn{
		typed{[]reflect.Type{reflect.TypeFor[*T]()}},
		func(x *Exec, intent any) (any, error) { return fn(x, intent.(*T)) },
	}
}

// OnAny adapts a handler that serves several intent types itself (with a type switch): intents
// lists them, as typed nil pointers ((*wire.FooIntent)(nil)). Only the listed types reach it,
// and registration checks they cover every version of the path.
func OnAny(fn func(x *Exec, intent any) (any, error), intents ...any) ExecFn {
	return ExecFn{typed{typesOf(intents)}, fn}
}

// Versions joins the adapters of one operation's versions into one function.
func Versions(fns ...ExecFn) ExecFn {
	var out ExecFn
	byType := map[reflect.Type]func(*Exec, any) (any, error){}
	for _, f := range fns {
		for _, t := range f.types {
			if _, dup := byType[t]; dup {
				panic(fmt.Sprintf("activity: two handlers for %v", t))
			}
			byType[t] = f.fn
			out.types = append(out.types, t)
		}
	}
	out.fn = func(x *Exec, intent any) (any, error) { return byType[reflect.TypeOf(intent)](x, intent) }
	return out
}

// UserFn returns the user an intent acts on (Operation.SelfUser).
type UserFn struct {
	typed
	fn func(x *Exec, intent any) string
}

// User adapts a SelfUser function of one intent type.
func User[T any](fn func(x *Exec, in *T) string) UserFn {
	return UserFn{
		typed{[]reflect.Type{reflect.TypeFor[*T]()}},
		func(x *Exec, intent any) string { return fn(x, intent.(*T)) },
	}
}

// UserAny adapts a SelfUser function serving the listed intent types.
func UserAny(fn func(x *Exec, intent any) string, intents ...any) UserFn {
	return UserFn{typed{typesOf(intents)}, fn}
}

func (f UserFn) set() bool { return f.fn != nil }

func (f UserFn) call(x *Exec, intent any) string {
	if !f.accepts(intent) {
		return ""
	}
	return f.fn(x, intent)
}

// EnvFn adds an operation's policy keywords (Operation.PolicyEnv).
type EnvFn struct {
	typed
	fn func(x *Exec, intent any) map[string]policy.Value
	// each, when set (EnvEach), gives one environment per part of the request (the calls of a
	// batched send); policies decide on each and the request is allowed only if every part is.
	each func(x *Exec, intent any) []map[string]policy.Value
}

// Env adapts a PolicyEnv function of one intent type.
func Env[T any](fn func(x *Exec, in *T) map[string]policy.Value) EnvFn {
	return EnvFn{typed{[]reflect.Type{reflect.TypeFor[*T]()}}, func(x *Exec, intent any) map[string]policy.Value {
		return fn(x, intent.(*T))
	}, nil}
}

// EnvAny adapts a PolicyEnv function serving the listed intent types.
func EnvAny(fn func(x *Exec, intent any) map[string]policy.Value, intents ...any) EnvFn {
	return EnvFn{typed{typesOf(intents)}, fn, nil}
}

// EnvEach adapts a PolicyEnv function that gives one environment per part of the request
// (eth_send_transaction's calls): the policies are evaluated against each, one denied part
// denies the request, and what does not look at the parts (MFA, session scopes) sees the first.
func EnvEach(fn func(x *Exec, intent any) []map[string]policy.Value, intents ...any) EnvFn {
	first := func(x *Exec, intent any) map[string]policy.Value {
		if envs := fn(x, intent); len(envs) > 0 {
			return envs[0]
		}
		return nil
	}
	return EnvFn{typed{typesOf(intents)}, first, fn}
}

func (f EnvFn) set() bool { return f.fn != nil }

func (f EnvFn) call(x *Exec, intent any) map[string]policy.Value {
	if !f.accepts(intent) {
		return nil
	}
	return f.fn(x, intent)
}

// callEach is the per-part environments of an EnvEach function (nil otherwise).
func (f EnvFn) callEach(x *Exec, intent any) []map[string]policy.Value {
	if f.each == nil || !f.accepts(intent) {
		return nil
	}
	return f.each(x, intent)
}

// RedactFn returns an intent as it may be stored and echoed (Operation.Redact).
type RedactFn struct {
	typed
	fn func(intent any) any
}

// Redactor adapts a Redact function of one intent type.
func Redactor[T any](fn func(in *T) any) RedactFn {
	return RedactFn{typed{[]reflect.Type{reflect.TypeFor[*T]()}}, func(intent any) any { return fn(intent.(*T)) }}
}

// RedactAny adapts a Redact function serving the listed intent types.
func RedactAny(fn func(intent any) any, intents ...any) RedactFn {
	return RedactFn{typed{typesOf(intents)}, fn}
}

func (f RedactFn) set() bool { return f.fn != nil }

// call redacts; an intent of a type the function was not made for is withheld entirely rather
// than shown unredacted.
func (f RedactFn) call(intent any) any {
	if !f.accepts(intent) {
		return struct{}{}
	}
	return f.fn(intent)
}

// QueryFn is a query handler, typed on its path's request type (made by Query).
type QueryFn struct {
	typ reflect.Type
	fn  func(q *Read, req any) (any, error)
}

// Query adapts a query handler.
func Query[T any](fn func(q *Read, req *T) (any, error)) QueryFn {
	return QueryFn{typ: reflect.TypeFor[*T](), fn: func(q *Read, req any) (any, error) { return fn(q, req.(*T)) }}
}

func (f QueryFn) call(q *Read, req any) (any, error) {
	if reflect.TypeOf(req) != f.typ {
		return nil, apierr.Internalf(nil, "no handler for request type %T", req)
	}
	return f.fn(q, req)
}

func typesOf(intents []any) []reflect.Type {
	out := make([]reflect.Type, 0, len(intents))
	for _, v := range intents {
		t := reflect.TypeOf(v)
		if t == nil || t.Kind() != reflect.Pointer {
			panic(fmt.Sprintf("activity: intent types are listed as typed nil pointers, got %T", v))
		}
		out = append(out, t)
	}
	return out
}

// checkVersions panics, naming the path, when a function of op does not accept the intent type
// of one of the path's activity type versions. It runs when the operation is registered, so a
// server with a gap does not start.
func checkVersions(op *Operation, w *wire.Op) {
	check := func(what string, types []reflect.Type, set bool) {
		if !set {
			return
		}
		var missing []string
		for _, v := range w.Versions {
			if t := reflect.TypeOf(v.NewIntent()); !slices.Contains(types, t) {
				missing = append(missing, fmt.Sprintf("%s (%v)", v.Type, t))
			}
		}
		if len(missing) > 0 {
			panic(
				fmt.Sprintf(
					"activity: %s of submit path %q has no handler for %s",
					what,
					op.Path,
					strings.Join(missing, ", "),
				),
			)
		}
	}
	if !op.Execute.set() {
		panic(fmt.Sprintf("activity: submit path %q has no Execute", op.Path))
	}
	check("Execute", op.Execute.types, true)
	check("Prepare", op.Prepare.types, op.Prepare.set())
	check("SelfUser", op.SelfUser.types, op.SelfUser.set())
	check("PolicyEnv", op.PolicyEnv.types, op.PolicyEnv.set())
	check("Redact", op.Redact.types, op.Redact.set())
}

// checkRequest panics when a query handler is typed on another type than its path's request.
func checkRequest(q *QueryOp, w *wire.Op) {
	if q.Execute.fn == nil {
		panic(fmt.Sprintf("activity: query path %q has no Execute", q.Path))
	}
	if t := reflect.TypeOf(w.NewRequest()); q.Execute.typ != t {
		panic(
			fmt.Sprintf(
				"activity: query path %q: handler takes %v, the path's request is %v",
				q.Path,
				q.Execute.typ,
				t,
			),
		)
	}
}
