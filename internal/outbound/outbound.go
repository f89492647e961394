package outbound

import (
	"context"
	"errors"
	"fmt"
)

// ErrInTransaction is returned by Check for a call made inside a write transaction.
var ErrInTransaction = errors.New("outbound call inside a store write transaction")

type forbidden struct{}

// Forbid marks ctx as the context of work inside a write transaction.
func Forbid(ctx context.Context) context.Context { return context.WithValue(ctx, forbidden{}, true) }

// Allow clears the mark (for work a transaction hands to after its commit).
func Allow(ctx context.Context) context.Context { return context.WithValue(ctx, forbidden{}, false) }

// Check refuses an outbound call (what names it) in a context marked by Forbid.
func Check(ctx context.Context, what string) error {
	if v, _ := ctx.Value(forbidden{}).(bool); v {
		return fmt.Errorf("%w: %s", ErrInTransaction, what)
	}
	return nil
}
