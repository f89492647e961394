package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latchkey/latchkey/internal/store"
)

// Round trips. An Update used to spend one round trip on BEGIN, one on each statement and one on
// COMMIT; a signing activity (a look-up, a read, the activity's write) took five. Each costs a
// wake-up of the server's backend and of the Go side, which on a busy machine is most of an
// Update's latency and much of both sides' CPU. A session saves two of them:
//
//   - BEGIN is not sent on its own: it goes in the same pipeline as the first statement that
//     needs the transaction (a pgx batch: one network write, one Sync). Plain reads before that
//     run on their own (see Query), so an Update that only reads sends no BEGIN nor COMMIT.
//   - A write whose only possible failure is one the caller does not act on (an activity's
//     upsert, a Put without unique keys, a notification) is deferred when the attempt allows it:
//     Tx returns nil at once and the statements go in the pipeline of the next statement, or of
//     the COMMIT. If a deferred write then fails, the statements after it in that pipeline,
//     COMMIT included, are skipped by the server (one Sync ends the pipeline), the attempt is
//     rolled back, and Update runs fn again with every write sent on its own (the way fn
//     learns, for example, that a fingerprint is held). Nothing is acknowledged before the
//     COMMIT that carries it has returned "COMMIT".

// beginSQL starts every Update's transaction.
const beginSQL = "begin isolation level read committed"

// errBegin wraps the failure of BEGIN.
var errBegin = errors.New("postgres: begin")

// errDeferredWrite is what a statement returns when a write deferred before it failed: the
// attempt is then re-run with writes sent on their own. It deliberately does not wrap the
// write's error, which fn must not mistake for its own statement's (a unique violation).
var errDeferredWrite = errors.New("postgres: an earlier write of this transaction failed")

// session is the connection of one Update attempt, shared by its Tx and the Tx of its
// savepoints. It implements querier: each statement first sends what is owed (BEGIN, deferred
// writes) in the same pipeline.
type session struct {
	pool        *pgxpool.Pool
	pc          *pgxpool.Conn      // acquired at the first statement (conn)
	begun       bool               // BEGIN has been sent
	pending     []*pgx.QueuedQuery // deferred writes not yet sent
	deferWrites bool               // this attempt may defer writes
	deferErr    error              // the first deferred write that failed, if any
	acts        []store.Activity   // the activities written, in order (resolving a lost COMMIT)

	raw     atomic.Pointer[net.Conn] // the connection's socket, for abandon
	stalled atomic.Bool              // abandon closed it
}

// abandon closes the session's socket: the server stopped answering (the attempt's watchdog,
// failover.go). Whatever waits on it fails at once as a lost connection.
func (s *session) abandon() {
	s.stalled.Store(true)
	if c := s.raw.Load(); c != nil {
		_ = (*c).Close()
	}
}

// written is the last write of each activity the attempt wrote.
func (s *session) written() []store.Activity {
	last := make(map[string]int, len(s.acts))
	for i, a := range s.acts {
		last[a.ID] = i
	}
	out := make([]store.Activity, 0, len(last))
	for i, a := range s.acts {
		if last[a.ID] == i {
			out = append(out, a)
		}
	}
	return out
}

var _ querier = (*session)(nil)

// conn is the session's connection, taken from the pool at the first statement: an Update
// whose reads are all served from memory and whose writes are all deferred holds none while fn
// runs, and may have its writes committed with other Updates' (commit.go).
func (s *session) conn(ctx context.Context) (*pgx.Conn, error) {
	if s.pc == nil {
		pc, err := s.pool.Acquire(ctx)
		if err != nil {
			return nil, fmt.Errorf("postgres: acquire a connection: %w", err)
		}
		s.pc = pc
		raw := pc.Conn().PgConn().Conn()
		s.raw.Store(&raw)
		if s.stalled.Load() {
			_ = raw.Close()
		}
	}
	return s.pc.Conn(), nil
}

// release returns the connection to the pool, if one was taken.
func (s *session) release() {
	if s.pc != nil {
		s.raw.Store(nil)
		if s.stalled.Load() {
			// Its socket was closed under pgx: make sure the pool drops it.
			_ = s.pc.Conn().Close(context.Background())
		}
		s.pc.Release()
		s.pc = nil
	}
}

// prefix returns a batch of what must run before the next statement and how many statements it
// holds, and marks them sent. inTx tells whether the statement needs the transaction begun;
// deferred writes always do.
func (s *session) prefix(inTx bool) (*pgx.Batch, int) {
	b := &pgx.Batch{}
	if !s.begun && (inTx || len(s.pending) > 0) {
		b.Queue(beginSQL)
		s.begun = true
	}
	b.QueuedQueries = append(b.QueuedQueries, s.pending...)
	s.pending = nil
	return b, b.Len()
}

// owes tells whether something must be sent before a statement (inTx: one that needs the
// transaction begun).
func (s *session) owes(inTx bool) bool { return (inTx && !s.begun) || len(s.pending) > 0 }

// readPrefix reads the results of the first n statements of br, which prefix returned. A
// failed BEGIN is returned as it is. A deferred write the server refused is kept in deferErr and
// reported as errDeferredWrite: the server skipped what followed it in the pipeline, a COMMIT
// included, so running fn again is safe. Any other failure (the connection lost, the context
// done) leaves the outcome of a COMMIT sent with it unknown, and is returned as it is.
func (s *session) readPrefix(br pgx.BatchResults, b *pgx.Batch, n int) error {
	for i := range n {
		if _, err := br.Exec(); err != nil {
			if b.QueuedQueries[i].SQL == beginSQL {
				return fmt.Errorf("%w: %w", errBegin, err)
			}
			if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) {
				return fmt.Errorf("postgres: deferred write: %w", err)
			}
			if s.deferErr == nil {
				s.deferErr = err
			}
			return errDeferredWrite
		}
	}
	return nil
}

// mergeable tells whether the session owes only BEGIN, deferred writes and COMMIT: no statement
// of the transaction has been sent.
func (s *session) mergeable() bool {
	return !s.begun && len(s.pending) > 0 && s.deferErr == nil
}

// deferred returns the error of a deferred write that failed earlier, if any: the attempt is
// lost and every later statement fails at once.
func (s *session) deferred() error {
	if s.deferErr != nil {
		return errDeferredWrite
	}
	return nil
}

// write queues the statements of b to run before the next statement, or runs them now (one
// pipeline) when this attempt does not defer writes.
func (s *session) write(ctx context.Context, b *pgx.Batch) error {
	if err := s.deferred(); err != nil {
		return err
	}
	if s.deferWrites {
		s.pending = append(s.pending, b.QueuedQueries...)
		return nil
	}
	br := s.SendBatch(ctx, b)
	var err error
	for range b.Len() {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// sendWith sends what is owed followed by the statements of q in one pipeline and reads the
// owed results.
func (s *session) sendWith(ctx context.Context, inTx bool, q *pgx.Batch) (pgx.BatchResults, error) {
	b, n := s.prefix(inTx)
	if q != nil {
		b.QueuedQueries = append(b.QueuedQueries, q.QueuedQueries...)
	}
	c, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	br := c.SendBatch(ctx, b)
	if err := s.readPrefix(br, b, n); err != nil {
		_ = br.Close()
		return nil, err
	}
	return br, nil
}

// Query runs a read that needs no transaction: before anything else needs one (a write, a
// lock, a savepoint), it runs on its own. Under READ COMMITTED every statement sees what was
// committed when it started, in a transaction or not, and a plain read takes no lock, so it
// sees and does the same either way; an Update that only reads then needs no BEGIN nor COMMIT.
func (s *session) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return s.query(ctx, false, sql, args)
}

func (s *session) query(ctx context.Context, inTx bool, sql string, args []any) (pgx.Rows, error) {
	if err := s.deferred(); err != nil {
		return nil, err
	}
	if !s.owes(inTx) {
		c, err := s.conn(ctx)
		if err != nil {
			return nil, err
		}
		return c.Query(ctx, sql, args...)
	}
	q := &pgx.Batch{}
	q.Queue(sql, args...)
	br, err := s.sendWith(ctx, inTx, q)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// batchRows are the rows of a batch's last statement; closing them closes the batch.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	if r.br == nil {
		return
	}
	r.Rows.Close()
	r.err = r.br.Close()
	r.br = nil
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

// QueryRow runs a statement that needs the transaction (Insert's).
func (s *session) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := s.query(ctx, true, sql, args)
	return row{rows, err}
}

// locking is the querier of reads that need the transaction (SELECT ... FOR UPDATE).
type locking struct{ *session }

func (l locking) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return l.query(ctx, true, sql, args)
}

// row is the pgx.Row of Query's first row.
type row struct {
	rows pgx.Rows
	err  error
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

func (s *session) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := s.deferred(); err != nil {
		return pgconn.CommandTag{}, err
	}
	if !s.owes(true) {
		c, err := s.conn(ctx)
		if err != nil {
			return pgconn.CommandTag{}, err
		}
		return c.Exec(ctx, sql, args...)
	}
	q := &pgx.Batch{}
	q.Queue(sql, args...)
	br, err := s.sendWith(ctx, true, q)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (s *session) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := s.deferred(); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	if !s.owes(true) {
		c, err := s.conn(ctx)
		if err != nil {
			return pgx.FailedBatchResults(b, err)
		}
		return c.SendBatch(ctx, b)
	}
	br, err := s.sendWith(ctx, true, b)
	if err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return br
}

// run runs statements without arguments, after what is owed, in one pipeline.
func (s *session) run(ctx context.Context, stmts ...string) error {
	b := &pgx.Batch{}
	for _, q := range stmts {
		b.Queue(q)
	}
	br := s.SendBatch(ctx, b)
	var err error
	for range stmts {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// commit sends what is owed and COMMIT in one pipeline. A transaction that never began (it
// only read) has nothing to commit. A failure that leaves the outcome unknown (the connection
// lost with COMMIT sent) is an *unknownOutcome; one that provably kept nothing is marked as
// failover.go's mark does.
func (s *session) commit(ctx context.Context) error {
	if err := s.deferred(); err != nil {
		return err
	}
	if !s.begun && len(s.pending) == 0 {
		return nil
	}
	q := &pgx.Batch{}
	q.Queue("commit")
	br, err := s.sendWith(ctx, true, q)
	if err != nil {
		if errors.Is(err, errDeferredWrite) || s.pc == nil {
			return mark(err) // refused before COMMIT, or no connection: nothing was sent
		}
		return commitFailure(err, errors.Is(err, errBegin))
	}
	tag, err := br.Exec()
	cerr := br.Close()
	if err != nil {
		return commitFailure(err, false)
	}
	// COMMIT of a transaction that failed answers ROLLBACK, without an error.
	if tag.String() != "COMMIT" {
		return pgx.ErrTxCommitRollback
	}
	if cerr != nil {
		// "COMMIT" arrived: the transaction committed, whatever became of the connection.
		_ = s.pc.Conn().Close(ctx)
	}
	return nil
}

// rollback ends the transaction without keeping anything. When it cannot, the connection is
// closed (the pool drops it): its state is unknown.
func (s *session) rollback(ctx context.Context) {
	s.pending = nil
	if !s.begun || s.pc == nil {
		return
	}
	c := s.pc.Conn()
	if c.IsClosed() {
		return
	}
	if c.PgConn().TxStatus() == 'I' {
		return // the transaction already ended (a COMMIT that failed)
	}
	if _, err := c.Exec(ctx, "rollback"); err != nil {
		_ = c.Close(ctx)
	}
}
