package hot

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/latchkey/latchkey/internal/store"
)

// organizationKind is the kind whose record's ID is an organization (its OrgID is the parent).
const organizationKind = "organization"

// Notifier is a transaction that can tell other processes, at its commit, which organizations
// it changed (the PostgreSQL driver's tx, with pg_notify).
type Notifier interface {
	Notify(ctx context.Context, payload string) error
}

// Store is a store.Store whose Update tells Versions which organizations it wrote records of
// the watched kinds to, before the commit is acknowledged.
type Store struct {
	store.Store
	v      *Versions
	kinds  map[string]bool
	origin string // this process's mark on the notifications it sends
	stop   func() // stops what Watch started
}

// Wrap returns st with Update watched for writes of records of kinds.
func Wrap(st store.Store, v *Versions, kinds ...string) *Store {
	s := &Store{Store: st, v: v, kinds: map[string]bool{}, origin: newOrigin()}
	for _, k := range kinds {
		s.kinds[k] = true
	}
	return s
}

// Update runs fn as the wrapped store does. Every organization fn writes a watched record of is
// marked as being written from that write until the commit has returned (committed or not),
// and its version moves on before Update returns.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	w := &writes{s: s, begun: map[string]*atomic.Uint64{}}
	defer w.end()
	return s.Store.Update(ctx, func(tx store.Tx) error {
		w.attempt = w.attempt[:0]
		if err := fn(&watchedTx{Tx: tx, w: w}); err != nil {
			return err
		}
		if n, ok := tx.(Notifier); ok && len(w.attempt) > 0 {
			return n.Notify(ctx, encodePayload(s.origin, w.attempt))
		}
		return nil
	})
}

// writes is one Update's organizations: every one begun (over every attempt, as fn may run
// more than once) and those this attempt wrote.
type writes struct {
	s       *Store
	begun   map[string]*atomic.Uint64
	attempt []string
}

func (w *writes) wrote(org string) {
	if _, ok := w.begun[org]; !ok {
		w.begun[org] = w.s.v.begin(org)
	}
	for _, o := range w.attempt {
		if o == org {
			return
		}
	}
	w.attempt = append(w.attempt, org)
}

func (w *writes) end() {
	for _, st := range w.begun {
		end(st)
	}
}

func (w *writes) record(kind, id, orgID string) {
	if !w.s.kinds[kind] {
		return
	}
	w.wrote(orgID)
	if kind == organizationKind {
		w.wrote(id)
	}
}

type watchedTx struct {
	store.Tx
	w *writes
}

func (t *watchedTx) Put(ctx context.Context, rec store.Record, keys ...store.Key) error {
	t.w.record(rec.Kind, rec.ID, rec.OrgID)
	return t.Tx.Put(ctx, rec, keys...)
}

func (t *watchedTx) Insert(ctx context.Context, rec store.Record, keys ...store.Key) error {
	t.w.record(rec.Kind, rec.ID, rec.OrgID)
	return t.Tx.Insert(ctx, rec, keys...)
}

// Delete learns the record's organization first (Delete names only kind and id).
func (t *watchedTx) Delete(ctx context.Context, kind, id string) error {
	if t.w.s.kinds[kind] {
		rec, err := t.Tx.NoLock().Get(ctx, kind, id)
		switch {
		case err == nil:
			t.w.record(kind, id, rec.OrgID)
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
	}
	return t.Tx.Delete(ctx, kind, id)
}

func (t *watchedTx) Savepoint(ctx context.Context, fn func(store.Tx) error) error {
	return t.Tx.Savepoint(ctx, func(tx store.Tx) error {
		return fn(&watchedTx{Tx: tx, w: t.w})
	})
}
