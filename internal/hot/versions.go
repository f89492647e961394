package hot

import (
	"context"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// An organization's state is one word: its version in the high bits and, in the low
// writingBits, how many transactions writing it are between their first write and their
// commit's return. A Token holds the whole word; it is valid only while the word is unchanged,
// which implies nobody was writing when it was taken and nobody has begun since.
const (
	writingBits = 20
	writingOne  = 1
	versionOne  = 1 << writingBits
	writingMask = versionOne - 1
)

// always is the live deadline of a cache that needs no listener (SQLite, or a test).
const always = math.MaxInt64

// Versions is the version of every organization the cache has seen. The zero value is not
// usable; call NewVersions.
type Versions struct {
	orgs sync.Map      // organization id -> *atomic.Uint64 (the state word above)
	gen  atomic.Uint64 // bumped by Reset: every Token taken before is invalid
	// live is the instant (Unix ns) until which the cache may serve: always, or a deadline
	// a listener keeps pushing forward, or 0 while nothing may be served.
	live atomic.Int64
	now  func() time.Time
	// barrier, when set, returns once every change another process committed before the
	// call has been applied (a PostgreSQL listener's round trip); a value is served only
	// after it, so a change committed elsewhere is never missed however fast the next
	// request comes.
	barrier func(context.Context) error
}

// NewVersions returns versions that may be served from at once.
func NewVersions() *Versions {
	v := &Versions{now: time.Now}
	v.live.Store(always)
	return v
}

func (v *Versions) state(org string) *atomic.Uint64 {
	if s, ok := v.orgs.Load(org); ok {
		return s.(*atomic.Uint64)
	}
	s, _ := v.orgs.LoadOrStore(org, new(atomic.Uint64))
	return s.(*atomic.Uint64)
}

func (v *Versions) isLive() bool {
	l := v.live.Load()
	return l == always || (l != 0 && v.now().UnixNano() < l)
}

// Token is what a cached value was read under: the cache generation and the state of up to
// two organizations (a request's organization and its parent).
type Token struct {
	gen uint64
	bad bool // taken while nothing could be cached: never valid
	n   int
	s   [2]*atomic.Uint64
	w   [2]uint64
}

// Token captures the state of org before the reads of a value to cache. A value read under
// a Token taken while org is being written, or while the cache is not live, is never stored.
func (v *Versions) Token(org string) Token {
	t := Token{gen: v.gen.Load()}
	t.Add(v, org)
	if !v.isLive() {
		t.bad = true
	}
	return t
}

// Add captures a second organization's state (the parent, once the first is read), before
// its reads.
func (t *Token) Add(v *Versions, org string) {
	if t.n == len(t.s) {
		t.bad = true
		return
	}
	s := v.state(org)
	w := s.Load()
	t.s[t.n], t.w[t.n] = s, w
	t.n++
	if w&writingMask != 0 {
		t.bad = true
	}
}

// Valid reports whether a value read under t may still be served.
func (v *Versions) Valid(t *Token) bool {
	if t.bad {
		return false
	}
	for i := 0; i < t.n; i++ {
		if t.s[i].Load() != t.w[i] {
			return false
		}
	}
	return t.gen == v.gen.Load() && v.isLive()
}

// Unchanged reports whether a value read under t may stand, inside a write transaction, for
// a read the transaction would make, so the transaction may skip the read.
//
// On SQLite (no barrier) it is exact: the one writer checks for other processes' commits when
// its transaction begins (dropping every Token if one did) and then holds the write lock, and a
// write to the organization by an earlier Update of the same batch has already moved its
// version. On PostgreSQL it holds once the barrier has been passed for ctx's request
// (PerRequest; outside a request, it waits now): every change committed before the request
// came has then been applied, so the value is what a read at that moment returned. A change
// another process commits while the request runs may be missed, as a READ COMMITTED read made
// earlier in the same transaction would miss it: neither locks what it read. Changes made in
// this process are never missed (they move the version before their commit returns).
func (v *Versions) Unchanged(ctx context.Context, t *Token) bool {
	return v.Valid(t) && v.settled(ctx) && v.Valid(t)
}

// begin marks org as being written (until end), which invalidates every Token of it.
func (v *Versions) begin(org string) *atomic.Uint64 {
	s := v.state(org)
	s.Add(versionOne + writingOne)
	return s
}

// end is begin's other half, after the commit has returned: the writer is no longer counted.
// The version moves on once more; begin's bump already invalidated every Token taken before
// it, and none taken in between was good, so this one only keeps versions increasing.
func end(s *atomic.Uint64) {
	s.Add(versionOne - writingOne)
}

// Changed bumps the version of orgs: another process committed a write to them.
func (v *Versions) Changed(orgs ...string) {
	for _, o := range orgs {
		v.state(o).Add(versionOne)
	}
}

// Reset invalidates every cached value.
func (v *Versions) Reset() { v.gen.Add(1) }

// Down stops serving and caching (a listener lost its connection) and invalidates every
// cached value.
func (v *Versions) Down() {
	v.live.Store(0)
	v.Reset()
}

// LiveUntil lets the cache serve until deadline: the listener has received every
// notification committed up to deadline minus its bound. A listener starting (or starting
// again) calls Reset first: notifications sent while it was not listening are lost.
func (v *Versions) LiveUntil(deadline time.Time) {
	v.live.Store(deadline.UnixNano())
}

// BarrierTimeout bounds how long a read waits at the barrier before it reads the store instead.
const BarrierTimeout = time.Second

// settled waits at the barrier, if there is one; false when it could not. Within a request
// (PerRequest) it waits once: the first wait already applied every change committed before
// the request came, which is all the barrier promises; a change committed while the request
// runs may or may not be seen by its later reads, as with reads of the store.
func (v *Versions) settled(ctx context.Context) bool {
	if v.barrier == nil {
		return true
	}
	once, _ := ctx.Value(requestKey{}).(*atomic.Bool)
	if once != nil && once.Load() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, BarrierTimeout)
	defer cancel()
	if v.barrier(ctx) != nil {
		return false
	}
	if once != nil {
		once.Store(true)
	}
	return true
}

type requestKey struct{}

// PerRequest wraps the API's handler so that each request waits at the barrier at most once,
// however many cached values it reads (its caller's records, then the key it signs with).
// Without a barrier (SQLite, one process) it returns h.
func (v *Versions) PerRequest(h http.Handler) http.Handler {
	if v == nil || v.barrier == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, new(atomic.Bool))))
	})
}
