package sqlite

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// Another process writing the same database (latchkey proxy, access, operator and keyring
// beside a running serve) is seen by the writer: PRAGMA data_version on a connection changes
// only when another connection commits, and the writer's connection is the only one of this
// store that writes. The writer reads it after every BEGIN IMMEDIATE, when it holds the write
// lock, so nothing can commit between the check and the writer's own transaction.

// foreignWatch is the writer's look-out for other processes' commits.
type foreignWatch struct {
	fn    atomic.Pointer[func()]
	last  int64        // the writer goroutine's last data_version (0: not read yet)
	began atomic.Int64 // when the writer last began a transaction (Unix ns)
}

// qDataVersion is prepared with the writer's statements.
const qDataVersion = "PRAGMA data_version"

// check runs on the writer goroutine inside BEGIN IMMEDIATE; q runs the writer's statements.
func (f *foreignWatch) check(q *queries) {
	f.began.Store(time.Now().UnixNano())
	fn := f.fn.Load()
	if fn == nil {
		return
	}
	var v int64
	if err := q.queryRow(context.Background(), func(r *sql.Rows) error { return r.Scan(&v) }, qDataVersion); err != nil {
		// Unknown: assume the worst.
		(*fn)()
		return
	}
	if f.last != 0 && v != f.last {
		(*fn)()
	}
	f.last = v
}

// WatchForeignCommits calls fn (on the writer goroutine, so it must be quick) whenever the
// writer finds that another connection committed since the writer's previous transaction.
func (s *Store) WatchForeignCommits(fn func()) {
	s.w.foreign.fn.Store(&fn)
}

// CheckForeignCommits makes the writer look for other processes' commits now (an empty
// transaction), unless it began a transaction within the last d.
func (s *Store) CheckForeignCommits(ctx context.Context, d time.Duration) error {
	if time.Since(time.Unix(0, s.w.foreign.began.Load())) < d {
		return nil
	}
	return s.Update(ctx, func(store.Tx) error { return nil })
}
