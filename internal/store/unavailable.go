package store

import (
	"context"
	"errors"
	"time"
)

// ErrUnavailable marks a failure of the database itself, not of the request: it could not be
// reached, the connection was refused, reset or lost, the server is shutting down or is a
// standby (read-only) where a write was needed. The request was not carried out and may be
// sent again. The drivers wrap such failures with Unavailable; the API answers them with 503
// (code 14), never 500.
var ErrUnavailable = errors.New("store: unavailable")

// ErrOutcomeUnknown: the connection was lost after COMMIT was sent and the database did not come
// back in time to tell whether the transaction committed. An Update writing an activity answers
// it only when the store stayed away past the request's deadline (the drivers resolve the outcome
// themselves when it comes back). It is a kind of ErrUnavailable.
var ErrOutcomeUnknown = errors.New("store: the outcome of the commit is unknown")

// unavailableError is a driver failure classified as ErrUnavailable (or ErrOutcomeUnknown); it
// keeps the driver's error as its cause.
type unavailableError struct {
	kind  error
	cause error
}

func (e *unavailableError) Error() string { return e.kind.Error() + ": " + e.cause.Error() }

func (e *unavailableError) Unwrap() []error { return []error{e.kind, e.cause} }

// Unavailable wraps cause, a failure of the database itself, so that errors.Is(err,
// ErrUnavailable) holds. nil stays nil; an error already so classified is returned as it is.
func Unavailable(cause error) error {
	if cause == nil || errors.Is(cause, ErrUnavailable) {
		return cause
	}
	return &unavailableError{kind: ErrUnavailable, cause: cause}
}

// OutcomeUnknown wraps cause, the failure of a COMMIT whose outcome is unknown, so that both
// errors.Is(err, ErrOutcomeUnknown) and errors.Is(err, ErrUnavailable) hold.
func OutcomeUnknown(cause error) error {
	if cause == nil || errors.Is(cause, ErrOutcomeUnknown) {
		return cause
	}
	return &unavailableError{kind: ErrOutcomeUnknown, cause: Unavailable(cause)}
}

// IsUnavailable reports whether err is a failure of the store rather than of the request:
// ErrUnavailable (ErrOutcomeUnknown included) or ErrClosed.
func IsUnavailable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrClosed)
}

// Replicator is implemented by a store whose committed rows can be lost with a server that
// crashed before its standby received them (PostgreSQL with a synchronous standby): Replicated
// returns once everything committed so far on the server it reaches is on its synchronous
// standbys. An answer built from a row read back rather than from the caller's own commit (a
// request sent again, answered from the activity it made before) waits for it first.
type Replicator interface {
	Replicated(ctx context.Context) error
}

// DatabaseClock is implemented by the Tx and the View Reader of a store shared by several
// processes (PostgreSQL): DatabaseNow is the database server's clock, the one clock they all
// read, so that a lease one process takes is timed the same way by the others whatever their
// own clocks say. A store kept by one process (SQLite) has no need of it.
type DatabaseClock interface {
	DatabaseNow(ctx context.Context) (time.Time, error)
}

// ErrNoClock is what a wrapper's DatabaseNow returns when what it wraps has no DatabaseClock.
var ErrNoClock = errors.New("store: no database clock")

// Now is the database's clock when r has one (DatabaseClock), else fallback's.
func Now(ctx context.Context, r Reader, fallback func() time.Time) (time.Time, error) {
	if c, ok := r.(DatabaseClock); ok {
		t, err := c.DatabaseNow(ctx)
		if !errors.Is(err, ErrNoClock) {
			return t, err
		}
	}
	return fallback(), nil
}
