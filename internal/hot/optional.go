package hot

import (
	"context"
	"errors"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// The drivers' optional capabilities, passed through Wrap so that code asking a store for them
// (the keyring's scan, the dashboard's totals) still finds them. Both drivers have them all.

var errNotOffered = errors.New("hot: the wrapped store does not offer this")

var _ store.Exporter = (*Store)(nil)

// RecordKinds is store.Exporter's, of the wrapped store.
func (s *Store) RecordKinds(ctx context.Context) (map[string]int, error) {
	if ex, ok := s.Store.(store.Exporter); ok {
		return ex.RecordKinds(ctx)
	}
	return nil, errNotOffered
}

// EachRecord is store.Exporter's, of the wrapped store.
func (s *Store) EachRecord(ctx context.Context, kind string, fn func(rec store.Record, keys []store.Key) error) error {
	if ex, ok := s.Store.(store.Exporter); ok {
		return ex.EachRecord(ctx, kind, fn)
	}
	return errNotOffered
}

// EachActivity is store.Exporter's, of the wrapped store.
func (s *Store) EachActivity(ctx context.Context, fn func(store.Activity) error) error {
	if ex, ok := s.Store.(store.Exporter); ok {
		return ex.EachActivity(ctx, fn)
	}
	return errNotOffered
}

// CountKind counts the records of kind in every organization (the dashboard's totals), in the
// wrapped store.
func (s *Store) CountKind(ctx context.Context, kind string) (int, error) {
	if ck, ok := s.Store.(interface {
		CountKind(ctx context.Context, kind string) (int, error)
	}); ok {
		return ck.CountKind(ctx, kind)
	}
	return 0, errNotOffered
}

// Replicated is store.Replicator's, of the wrapped store (nil when it has none: nothing to wait
// for).
func (s *Store) Replicated(ctx context.Context) error {
	if r, ok := s.Store.(store.Replicator); ok {
		return r.Replicated(ctx)
	}
	return nil
}

// DatabaseNow is store.DatabaseClock's, of the wrapped transaction (store.ErrNoClock when it has
// none: store.Now then reads its fallback).
func (t *watchedTx) DatabaseNow(ctx context.Context) (time.Time, error) {
	if c, ok := t.Tx.(store.DatabaseClock); ok {
		return c.DatabaseNow(ctx)
	}
	return time.Time{}, store.ErrNoClock
}

// Role is store.RoleReader's, of the wrapped store; a store without one is taken as writable
// when it answers a Ping.
func (s *Store) Role(ctx context.Context) (store.Role, error) {
	return store.ReadRole(ctx, s.Store)
}
