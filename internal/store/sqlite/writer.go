package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/internal/sqlcore"
)

// Job states. A job is queued until the writer takes it or its caller abandons it (context
// done while still queued); whichever CAS wins decides.
const (
	jobQueued int32 = iota
	jobTaken
	jobAbandoned
)

// job is one Update waiting for, or run by, the writer.
type job struct {
	ctx   context.Context
	fn    func(store.Tx) error
	state atomic.Int32
	// Set by the writer before done is closed.
	err      error
	panicked bool
	panicVal any
	done     chan struct{}
}

// writer owns the one read-write connection. Only its goroutine (run) touches the connection,
// and every Update's fn runs on that goroutine.
type writer struct {
	conn     *sql.Conn
	q        *queries
	r        *reader
	jobs     chan *job
	quit     chan struct{}
	stopped  chan struct{}
	maxBatch int
	batch    []*job
	onCommit func(n int, d time.Duration)
	foreign  foreignWatch // other processes' commits (foreign.go)

	maxLinger time.Duration // Options.MaxLinger
	lastBatch int           // jobs in the last batch run
	timer     *time.Timer   // next's, reused

	// Statistics, for tests and metrics.
	commits  atomic.Int64 // committed batch transactions
	taken    atomic.Int64 // jobs taken off the queue
	jobsRun  atomic.Int64 // jobs run in committed batches (succeeded or rolled back to their savepoint)
	restarts atomic.Int64 // batches re-run in savepoint mode after a job failed
}

var writerStatements = []string{
	readQueries.GetRecord, qInsertRecord, qUpsertRecord, qInsertOrIgnoreRecord, qDeleteKeys, qInsertKey, qDeleteRecord,
	qUpsertActivity, readQueries.GetActivity, readQueries.GetActivityByFP, readQueries.Lookup, readQueries.CountRecords,
	qSavepointWrite, qRollbackToWrite, qReleaseWrite, qUniqueOwner,
	qSavepointJob, qRollbackToJob, qReleaseJob,
	qBeginImmediate, qCommit, qRollback, qDataVersion,
}

func newWriter(ctx context.Context, conn *sql.Conn, opts Options) (*writer, error) {
	q := &queries{cache: newStmtCache(conn), background: true}
	for _, s := range writerStatements {
		if _, err := q.cache.stmt(ctx, s); err != nil {
			q.cache.close()
			return nil, fmt.Errorf("sqlite: prepare writer statements: %w", err)
		}
	}
	return &writer{
		onCommit:  opts.OnCommit,
		conn:      conn,
		q:         q,
		r:         newReader(q),
		jobs:      make(chan *job, opts.QueueLength),
		quit:      make(chan struct{}),
		stopped:   make(chan struct{}),
		maxBatch:  opts.MaxBatch,
		maxLinger: opts.MaxLinger,
	}, nil
}

func (w *writer) close() error {
	return errors.Join(w.q.cache.close(), w.conn.Close())
}

// run is the writer goroutine. It waits for a job, then builds one batch transaction from that
// job and every job queued behind it (under concurrent load, waiting up to Options.MaxLinger
// for more: lingerFor), commits, and acknowledges them all. A lone Update is committed at once.
func (w *writer) run() {
	defer close(w.stopped)
	for {
		select {
		case j := <-w.jobs:
			w.runBatch(j)
		case <-w.quit:
			// Close stopped new enqueues before closing quit: finish what is queued.
			for {
				select {
				case j := <-w.jobs:
					w.runBatch(j)
				default:
					return
				}
			}
		}
	}
}

func (w *writer) exec(query string) error {
	_, err := w.q.exec(context.Background(), query)
	return err
}

func (w *writer) runBatch(first *job) {
	if !first.state.CompareAndSwap(jobQueued, jobTaken) {
		return // abandoned by its caller
	}
	w.taken.Add(1)
	batch := append(w.batch[:0], first)
	// Jobs run optimistically, without a savepoint each: most succeed, and a savepoint costs two
	// statements on the serial path. The first job that fails makes the batch start over:
	// roll back, then re-run the jobs that had succeeded (Update's fn may run more than once),
	// this time each in its own savepoint, and carry on that way to the end of the batch.
	guarded := false
	var fatal error
	if err := w.exec(qBeginImmediate); err != nil {
		fatal = fmt.Errorf("sqlite: begin: %w", err)
	} else {
		w.foreign.check(w.q)
		fatal = w.runJob(first, false)
		if fatal == nil && first.failed() {
			guarded, fatal = true, w.restart(batch)
		}
	}
	linger := w.lingerFor()
	for fatal == nil && len(batch) < w.maxBatch {
		j := w.next(&linger)
		if j == nil {
			break
		}
		if !j.state.CompareAndSwap(jobQueued, jobTaken) {
			continue
		}
		w.taken.Add(1)
		batch = append(batch, j)
		fatal = w.runJob(j, guarded)
		if fatal == nil && !guarded && j.failed() {
			guarded, fatal = true, w.restart(batch)
		}
	}
	if fatal == nil {
		start := time.Now()
		if err := w.exec(qCommit); err != nil {
			fatal = fmt.Errorf("sqlite: commit: %w", err)
		} else if w.onCommit != nil {
			w.onCommit(len(batch), time.Since(start))
		}
	}
	if fatal != nil {
		// Nothing of this batch is kept. ROLLBACK fails harmlessly if SQLite already
		// rolled back on its own (disk full, I/O error).
		_ = w.exec(qRollback)
		for _, j := range batch {
			if !j.panicked {
				j.err = fatal
			}
		}
	} else {
		w.commits.Add(1)
		w.jobsRun.Add(int64(len(batch)))
	}
	w.lastBatch = len(batch)
	for i, j := range batch {
		close(j.done)
		batch[i] = nil
	}
	w.batch = batch[:0]
}

// lingerFor is how long the batch about to be built may wait, in all, for jobs that are not
// queued yet. An fsync costs the same for one job as for a hundred, and so do BEGIN and
// COMMIT, and the pages every activity shares (the end of the activity table and of its
// indexes) are written once per commit: under concurrent load it pays to let a few more
// callers reach the queue before committing. Concurrent load is what the last batch showed
// (it carried more than one job); a lone caller never waits.
func (w *writer) lingerFor() time.Duration {
	if w.maxLinger <= 0 || w.lastBatch < 2 {
		return 0
	}
	return w.maxLinger
}

// next takes the next queued job, waiting for one up to *linger (which it spends) when none
// is queued; nil when none came.
func (w *writer) next(linger *time.Duration) *job {
	select {
	case j := <-w.jobs:
		return j
	default:
	}
	if *linger <= 0 {
		return nil
	}
	start := time.Now()
	if w.timer == nil {
		w.timer = time.NewTimer(*linger)
	} else {
		w.timer.Reset(*linger)
	}
	defer func() { *linger -= time.Since(start) }()
	select {
	case j := <-w.jobs:
		w.timer.Stop()
		return j
	case <-w.timer.C:
		return nil
	case <-w.quit:
		w.timer.Stop()
		return nil
	}
}

// restart undoes the optimistic part of a batch whose last job failed and re-runs the jobs
// before it that had succeeded, each in its own savepoint. The failed job keeps its result.
func (w *writer) restart(batch []*job) error {
	w.restarts.Add(1)
	if err := w.exec(qRollback); err != nil {
		return fmt.Errorf("sqlite: rollback: %w", err)
	}
	if err := w.exec(qBeginImmediate); err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	for _, j := range batch[:len(batch)-1] {
		if j.failed() {
			continue
		}
		if err := w.runJob(j, true); err != nil {
			return err
		}
	}
	return nil
}

func (j *job) failed() bool { return j.err != nil || j.panicked }

// runJob runs one job of the batch transaction. Guarded, it runs inside SAVEPOINT j and rolls
// back to it when fn fails; unguarded, the caller restarts the batch on failure. The returned
// error is fatal to the whole batch (the transaction machinery itself broke); fn's own error
// goes to the job.
func (w *writer) runJob(j *job, guarded bool) error {
	j.err, j.panicked, j.panicVal = nil, false, nil
	if guarded {
		if err := w.exec(qSavepointJob); err != nil {
			return fmt.Errorf("sqlite: savepoint: %w", err)
		}
	}
	t := newTx(w.r, w, 0, nil)
	j.err, j.panicked, j.panicVal = call(j.fn, t)
	t.finished.Store(true)
	if !guarded {
		return nil
	}
	if j.failed() {
		if err := w.exec(qRollbackToJob); err != nil {
			return fmt.Errorf("sqlite: rollback to savepoint: %w", err)
		}
	}
	if err := w.exec(qReleaseJob); err != nil {
		return fmt.Errorf("sqlite: release savepoint: %w", err)
	}
	return nil
}

// call runs fn, turning a panic into a value the caller's goroutine re-raises.
//
//lint:ignore ST1008 the results mirror the job fields they fill, in their order.
func call(fn func(store.Tx) error, t store.Tx) (err error, panicked bool, panicVal any) {
	normal := false
	defer func() {
		if !normal {
			panicked = true
			panicVal = recover()
			if panicVal == nil {
				panicVal = errors.New("sqlite: Update fn panicked with nil")
			}
		}
	}()
	err = fn(t)
	normal = true
	return err, false, nil
}

// errTxDone is returned by a Tx used after its fn returned.
var errTxDone = errors.New("sqlite: transaction used after its Update fn returned")

// tx is the store.Tx given to an Update's fn: reads and writes on the writer's connection,
// inside the batch transaction.
type tx struct {
	sqlcore.Live // the reads, on reader, each after check
	reader       *reader
	w            *writer
	depth        int // savepoint nesting of this Tx (0: the job's own savepoint)
	finished     atomic.Bool
	parent       *tx
}

var _ store.Tx = (*tx)(nil)

func newTx(r *reader, w *writer, depth int, parent *tx) *tx {
	t := &tx{reader: r, w: w, depth: depth, parent: parent}
	t.Live = sqlcore.Live{R: r, Check: t.check}
	return t
}

func (t *tx) check(ctx context.Context) error {
	for p := t; p != nil; p = p.parent {
		if p.finished.Load() {
			return errTxDone
		}
	}
	return ctx.Err()
}

func (t *tx) Put(ctx context.Context, rec store.Record, keys ...store.Key) error {
	return t.put(ctx, qUpsertRecord, rec, keys)
}

func (t *tx) Insert(ctx context.Context, rec store.Record, keys ...store.Key) error {
	return t.put(ctx, qInsertRecord, rec, keys)
}

func (t *tx) put(ctx context.Context, stmt string, rec store.Record, keys []store.Key) (err error) {
	if err := t.check(ctx); err != nil {
		return err
	}
	if rec.Kind == "" || rec.ID == "" {
		return fmt.Errorf("sqlite: record needs a kind and an id")
	}
	created, updated, err := sqlcore.Times(rec.CreatedAt, rec.UpdatedAt)
	if err != nil {
		return err
	}
	keys, anyUnique := sqlcore.NormalizeKeys(keys)
	// Only a unique key can fail after the record row is written. This connection is the only
	// writer, so checking every unique key first is race-free and leaves nothing half-written
	// without the cost of a savepoint (two statements and a sub-journal) on every Put.
	if anyUnique {
		for _, k := range keys {
			if !k.Unique {
				continue
			}
			var kind, id string
			err := t.w.q.queryRow(
				ctx,
				func(rows *sql.Rows) error { return rows.Scan(&kind, &id) },
				qUniqueOwner,
				k.Name,
				k.Value,
			)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return fmt.Errorf("sqlite: put %s/%s: key %q: %w", rec.Kind, rec.ID, k.Name, err)
			case kind != rec.Kind || id != rec.ID:
				return fmt.Errorf(
					"%w: unique key %q for record %s/%s is taken",
					store.ErrAlreadyExists,
					k.Name,
					rec.Kind,
					rec.ID,
				)
			}
		}
	}
	if stmt == qUpsertRecord {
		// Most Puts create: try a plain insert first, which needs no key replacement.
		res, err := t.w.q.exec(
			ctx,
			qInsertOrIgnoreRecord,
			rec.Kind,
			rec.ID,
			rec.OrgID,
			sqlcore.Data(rec.Data),
			created,
			updated,
		)
		if err != nil {
			return fmt.Errorf("sqlite: put %s/%s: %w", rec.Kind, rec.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			stmt = "" // inserted
		}
	}
	if stmt != "" {
		if _, err := t.w.q.exec(ctx, stmt, rec.Kind, rec.ID, rec.OrgID, sqlcore.Data(rec.Data), created, updated); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("%w: record %s/%s", store.ErrAlreadyExists, rec.Kind, rec.ID)
			}
			return fmt.Errorf("sqlite: put %s/%s: %w", rec.Kind, rec.ID, err)
		}
	}
	if stmt == qUpsertRecord {
		if _, err := t.w.q.exec(ctx, qDeleteKeys, rec.Kind, rec.ID); err != nil {
			return fmt.Errorf("sqlite: put %s/%s: replace keys: %w", rec.Kind, rec.ID, err)
		}
	}
	for _, k := range keys {
		if _, err := t.w.q.exec(ctx, qInsertKey, k.Name, k.Value, rec.Kind, rec.ID, rec.OrgID, k.Unique); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf(
					"%w: unique key %q for record %s/%s is taken",
					store.ErrAlreadyExists,
					k.Name,
					rec.Kind,
					rec.ID,
				)
			}
			return fmt.Errorf("sqlite: put %s/%s: key %q: %w", rec.Kind, rec.ID, k.Name, err)
		}
	}
	return nil
}

func (t *tx) Delete(ctx context.Context, kind, id string) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	res, err := t.w.q.exec(ctx, qDeleteRecord, kind, id)
	if err != nil {
		return fmt.Errorf("sqlite: delete %s/%s: %w", kind, id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: delete %s/%s: %w", kind, id, err)
	} else if n == 0 {
		return fmt.Errorf("%w: record %s/%s", store.ErrNotFound, kind, id)
	}
	if _, err := t.w.q.exec(ctx, qDeleteKeys, kind, id); err != nil {
		return fmt.Errorf("sqlite: delete %s/%s: keys: %w", kind, id, err)
	}
	return nil
}

func (t *tx) PutActivity(ctx context.Context, a store.Activity) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	if a.ID == "" {
		return fmt.Errorf("sqlite: activity needs an id")
	}
	created, updated, err := sqlcore.Times(a.CreatedAt, a.UpdatedAt)
	if err != nil {
		return err
	}
	var fp any
	if a.Fingerprint != "" {
		fp = a.Fingerprint
	}
	if _, err := t.w.q.exec(ctx, qUpsertActivity, a.ID, a.OrgID, fp, a.Status, a.Type, created, updated, sqlcore.Data(a.Data)); err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("%w: another activity holds the fingerprint of activity %s", store.ErrAlreadyExists, a.ID)
		}
		return fmt.Errorf("sqlite: put activity %s: %w", a.ID, err)
	}
	return nil
}

// Lock has nothing to do: the writer runs one transaction at a time.
func (t *tx) Lock(ctx context.Context, name string) error { return t.check(ctx) }

// NoLock is the transaction itself: SQLite's writer takes no row locks.
func (t *tx) NoLock() store.Reader { return t }

func (t *tx) Savepoint(ctx context.Context, fn func(store.Tx) error) (err error) {
	if err := t.check(ctx); err != nil {
		return err
	}
	name := "s" + strconv.Itoa(t.depth+1)
	if _, err := t.w.q.exec(ctx, "SAVEPOINT "+name); err != nil {
		return fmt.Errorf("sqlite: savepoint: %w", err)
	}
	child := newTx(t.reader, t.w, t.depth+1, t)
	normal := false
	defer func() {
		child.finished.Store(true)
		if !normal || err != nil {
			if _, rerr := t.w.q.exec(context.Background(), "ROLLBACK TO "+name); rerr != nil {
				err = errors.Join(err, fmt.Errorf("sqlite: rollback to savepoint: %w", rerr))
			}
		}
		if _, rerr := t.w.q.exec(context.Background(), "RELEASE "+name); rerr != nil {
			err = errors.Join(err, fmt.Errorf("sqlite: release savepoint: %w", rerr))
		}
	}()
	err = fn(child)
	normal = true
	return err
}
