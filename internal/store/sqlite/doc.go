// Package sqlite is the embedded store: one SQLite database file (modernc.org/sqlite, pure
// Go), opened with Open. It owns the file, its schema (migrations/, applied in order at Open,
// one transaction each, recorded in schema_migrations) and the one connection that writes.
//
// # Durability
//
// The file runs in WAL mode with synchronous=FULL: when Update returns nil, its writes are in
// the WAL and fsynced, and survive a crash of the process or of the machine. The file is
// created with mode 0600 (SQLite gives the -wal and -shm files the same mode).
//
// # Reads
//
// View runs on a pool of read-only connections (Options.ReadConns). WAL lets them read beside
// the writer; each read sees what was committed when it started, never a batch in progress.
// Reads inside Update run on the writer's connection, inside its transaction, and see its
// writes.
//
// # Group commit
//
// Exactly one goroutine, the writer, owns the read-write connection and runs every Update's
// fn. Update queues a job and waits; the writer:
//
//	idle:     wait for a job (no timer: a lone Update is committed at once)
//	begin:    BEGIN IMMEDIATE
//	run job:  fn(tx), without a savepoint: most jobs succeed, and a savepoint costs two
//	          statements on the serial path
//	drain:    while the batch has fewer than Options.MaxBatch (512) jobs, take the next queued
//	          job and run it the same way; when none is queued and the previous batch carried
//	          more than one job (concurrent load), wait for one, up to Options.MaxLinger (1 ms)
//	          for the whole batch
//	restart:  when a job's fn fails or panics, roll the batch back and run again the jobs
//	          before it that had succeeded, now each in SAVEPOINT j (ROLLBACK TO j on failure,
//	          RELEASE j), and every later job of the batch the same way
//	commit:   COMMIT (one fsync for the whole batch)
//	ack:      each job's Update returns: nil, or its own fn's error (its writes were rolled
//	          back and the others' kept); a panic in fn is raised again in the caller's
//	          goroutine
//	failure:  if BEGIN, a savepoint statement or COMMIT fails, the batch is rolled back and
//	          every job in it returns that error
//	back to idle.
//
// Jobs arriving while a batch runs join it, so under load many Updates share one fsync
// (4-11 activities a commit with 32 signing clients on 2 cores); at low load each Update is
// its own batch. An fn may therefore run twice (a restart), as Update's contract allows.
//
// A job is queued until the writer takes it. If the caller's context ends before that, Update
// returns the context's error and fn never runs; once taken, Update waits for the batch and
// reports its true outcome. The writer runs statements with a background context after
// checking the caller's, so a cancellation never interrupts the shared transaction.
//
// Put and Insert check every unique key before writing (the writer is the only one, so the check
// holds), so a taken key (ErrAlreadyExists) leaves the record as it was and the transaction
// usable.
//
// # What fn must not do
//
// fn runs on the writer goroutine, inside a transaction other callers' Updates share, so it
// must be short and must not block on other Updates: calling Update (or anything that waits
// for one) from fn deadlocks the store, and runtime.Goexit (t.Fatal in a test) kills the
// writer. fn must not keep its Tx after returning or use it from other goroutines.
//
// Close stops new Updates (ErrClosed), lets the queued ones commit, and closes the file.
package sqlite
