package activity

import (
	"context"
	"reflect"
	"strings"

	"github.com/latchkey/latchkey/internal/outbound"
)

// afterCommit collects what one attempt of an activity's transaction asked to run once it has
// committed (Exec.AfterCommit). Each attempt starts with an empty list (reset), so work asked for
// by an attempt that was rolled back and run again never happens.
type afterCommit struct{ fns []func(context.Context) }

// AfterCommit runs fn once the activity's transaction has committed, outside it and before the
// activity is answered: the place for network I/O a handler's writes call for (sending the
// messages it queued, broadcasting a transaction it recorded). fn's context allows outbound
// calls. If the transaction does not commit, fn never runs.
func (x *Exec) AfterCommit(fn func(ctx context.Context)) {
	if x.after != nil {
		x.after.fns = append(x.after.fns, fn)
		return
	}
	// Not inside an engine transaction (Prepare, or a handler called directly): nothing to
	// wait for.
	fn(outbound.Allow(x.Ctx))
}

// reset empties the list for a new attempt of the transaction.
func (l *afterCommit) reset() *afterCommit {
	l.fns = l.fns[:0]
	return l
}

// run runs what the committed attempt asked for.
func (l *afterCommit) run(ctx context.Context) {
	ctx = outbound.Allow(ctx)
	for _, fn := range l.fns {
		fn(ctx)
	}
	l.fns = nil
}

// oidcTokens returns the id_tokens an intent carries: every string member named oidcToken, at
// any depth (sign-up's OAuth providers, oauth_login, oauth).
func oidcTokens(intent any) []string {
	var out []string
	var walk func(v reflect.Value, name string)
	walk = func(v reflect.Value, name string) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem(), name)
			}
		case reflect.Struct:
			t := v.Type()
			for i := 0; i < t.NumField(); i++ {
				if f := t.Field(i); f.IsExported() {
					n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
					walk(v.Field(i), n)
				}
			}
		case reflect.Slice, reflect.Array:
			if v.Type().Elem().Kind() != reflect.Uint8 {
				for i := 0; i < v.Len(); i++ {
					walk(v.Index(i), name)
				}
			}
		case reflect.String:
			if name == "oidcToken" && v.String() != "" {
				out = append(out, v.String())
			}
		}
	}
	walk(reflect.ValueOf(intent), "")
	return out
}
