package hot

import (
	"context"
	"sync"
	"sync/atomic"
)

// DefaultMaxEntries bounds a Cache made with max 0.
const DefaultMaxEntries = 100_000

// Cache maps a string key to a value read under a Token. Values are shared: treat them as
// immutable.
type Cache[V any] struct {
	v   *Versions
	max int64
	n   atomic.Int64
	m   sync.Map // key -> *entry[V]
	// hits counts the values served (tests prove with it that a path is cached).
	hits atomic.Int64
}

type entry[V any] struct {
	t   Token
	val V
}

// NewCache returns a cache over v holding at most max entries (0: DefaultMaxEntries); when it
// is full it is emptied and fills again with what is read next.
func NewCache[V any](v *Versions, max int) *Cache[V] {
	if max <= 0 {
		max = DefaultMaxEntries
	}
	return &Cache[V]{v: v, max: int64(max)}
}

// Versions returns the versions the cache's tokens are taken from.
func (c *Cache[V]) Versions() *Versions { return c.v }

// Hits is how many values Get has served.
func (c *Cache[V]) Hits() int64 { return c.hits.Load() }

// Get returns the value under key if its token is still valid, once every change committed
// before the call is known (the barrier, across PostgreSQL processes).
func (c *Cache[V]) Get(ctx context.Context, key string) (V, bool) {
	if e := c.get(ctx, key); e != nil {
		return e.val, true
	}
	var zero V
	return zero, false
}

func (c *Cache[V]) get(ctx context.Context, key string) *entry[V] {
	if e, ok := c.m.Load(key); ok {
		e := e.(*entry[V])
		if c.v.Valid(&e.t) && c.v.settled(ctx) && c.v.Valid(&e.t) {
			c.hits.Add(1)
			return e
		}
		if c.m.CompareAndDelete(key, e) {
			c.n.Add(-1)
		}
	}
	return nil
}

// Put stores val under key, read under t (taken before the reads). A token already invalid
// stores nothing.
func (c *Cache[V]) Put(key string, t Token, val V) {
	if !c.v.Valid(&t) {
		return
	}
	if c.n.Load() >= c.max {
		c.m.Range(func(k, _ any) bool {
			c.m.Delete(k)
			return true
		})
		c.n.Store(0)
	}
	if _, loaded := c.m.Swap(key, &entry[V]{t: t, val: val}); !loaded {
		c.n.Add(1)
	}
}

// Load returns the value under key, or reads it and caches it. read is called with a function
// to capture the state of a further organization the value depends on (the parent, once the
// first organization is read), before the reads that depend on it; org is captured before
// read is called. Errors are returned and never cached.
func (c *Cache[V]) Load(ctx context.Context, key, org string, read func(also func(org string)) (V, error)) (V, error) {
	v, _, err := c.LoadToken(ctx, key, org, read)
	return v, err
}

// LoadInTx is Load for a read inside a write transaction, through the transaction's reader
// read: a cached value stands for the read as Versions.Unchanged says (exactly on SQLite; as
// of the request's arrival on PostgreSQL). A value read while an earlier write of the same
// transaction or batch to org is not yet committed is never cached: org is then being
// written, so its Token is bad.
func (c *Cache[V]) LoadInTx(ctx context.Context, key, org string, read func() (V, error)) (V, error) {
	v, _, err := c.LoadToken(ctx, key, org, func(func(string)) (V, error) { return read() })
	return v, err
}

// LoadToken is Load that also returns the Token the value was read under, for Unchanged.
func (c *Cache[V]) LoadToken(
	ctx context.Context,
	key, org string,
	read func(also func(org string)) (V, error),
) (V, Token, error) {
	if e := c.get(ctx, key); e != nil {
		return e.val, e.t, nil
	}
	t := c.v.Token(org)
	v, err := read(func(o string) { t.Add(c.v, o) })
	if err != nil {
		return v, Token{bad: true}, err
	}
	c.Put(key, t, v)
	return v, t, nil
}
