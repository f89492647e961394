package hot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/store/postgres"
)

// maxPayload keeps a notification under PostgreSQL's 8,000-byte limit; a transaction that
// changed more organizations than fit says "all" instead.
const maxPayload = 7_000

// LiveBound is how long after the listening connection last proved itself the cache may
// still serve: the longest a change by another PostgreSQL process can go unseen.
const LiveBound = time.Second

// SQLitePoll is how often an idle SQLite writer is made to look for another process's commits.
const SQLitePoll = 100 * time.Millisecond

func newOrigin() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// encodePayload is "origin:org1,org2", or "origin:*" when the list would not fit.
func encodePayload(origin string, orgs []string) string {
	n := len(origin) + 1
	for _, o := range orgs {
		n += len(o) + 1
	}
	if n > maxPayload {
		return origin + ":*"
	}
	return origin + ":" + strings.Join(orgs, ",")
}

// applyPayload bumps what another process's notification names.
func (v *Versions) applyPayload(origin, payload string) {
	from, orgs, ok := strings.Cut(payload, ":")
	switch {
	case !ok || orgs == "*":
		v.Reset()
	case from == origin:
		// Ours: Update already moved these organizations on before it returned.
	default:
		v.Changed(strings.Split(orgs, ",")...)
	}
}

type pgListener interface {
	Listen(ctx context.Context, l postgres.Listener)
}

// sqliteWatcher is the SQLite driver's look-out for another process's commits.
type sqliteWatcher interface {
	// WatchForeignCommits calls fn whenever the writer finds that another connection
	// committed since the writer's previous transaction.
	WatchForeignCommits(fn func())
	// CheckForeignCommits makes the writer look now unless it began a transaction within
	// the last d.
	CheckForeignCommits(ctx context.Context, d time.Duration) error
}

// Watch starts what keeps the cache exact against other processes: on PostgreSQL a listener
// (the cache serves nothing until it is up), on SQLite the writer's data_version check. Close
// stops it.
func (s *Store) Watch() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	s.stop = func() {
		cancel()
		wg.Wait()
	}
	switch st := s.Store.(type) {
	case pgListener:
		s.v.Down()
		b := new(postgres.Barrier)
		s.v.barrier = b.Wait
		wg.Go(func() {
			st.Listen(ctx, postgres.Listener{
				Barrier: b,
				Notify:  func(p string) { s.v.applyPayload(s.origin, p) },
				Up:      s.v.Reset,
				Live:    func(at time.Time) { s.v.LiveUntil(at.Add(LiveBound)) },
				Down:    s.v.Down,
			})
		})
	case sqliteWatcher:
		st.WatchForeignCommits(s.v.Reset)
		wg.Go(func() {
			t := time.NewTicker(SQLitePoll)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					_ = st.CheckForeignCommits(ctx, SQLitePoll)
				}
			}
		})
	}
}

// Close stops the watchers, then closes the store.
func (s *Store) Close() error {
	if s.stop != nil {
		s.stop()
	}
	return s.Store.Close()
}
