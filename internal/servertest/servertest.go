package servertest

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/server"
)

// DatabaseURLEnv names the environment variable holding the PostgreSQL the tests use.
const DatabaseURLEnv = "LATCHKEY_TEST_DATABASE_URL"

// Harness is one Latchkey behind httptest with a clock the test moves.
type Harness struct {
	T      testing.TB
	Server *server.Server
	// URL is the API's base URL (no trailing slash).
	URL string
	// DataDir is the server's data directory (master.key, the SQLite database, the outbox).
	DataDir string
	// Config is the configuration the server was opened with.
	Config server.Config

	mu     sync.Mutex
	now    time.Time
	closed sync.Once
	srv    *httptest.Server
}

// Option adjusts how New opens the server.
type Option func(*options)

type options struct {
	configure []func(*server.Config)
	sqlite    bool
}

// WithConfig adjusts the server's configuration before it is opened.
func WithConfig(configure func(*server.Config)) Option {
	return func(o *options) {
		if configure != nil {
			o.configure = append(o.configure, configure)
		}
	}
}

// SQLite keeps the store in the data directory's SQLite database even when
// LATCHKEY_TEST_DATABASE_URL is set, for tests that read or reopen the database file.
func SQLite() Option { return func(o *options) { o.sqlite = true } }

// New opens a Latchkey on a fresh temporary data directory with a new master key, on SQLite
// or, when LATCHKEY_TEST_DATABASE_URL is set, on a fresh PostgreSQL schema. Everything is
// closed when the test ends.
func New(t testing.TB, opts ...Option) *Harness {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cfg := NewConfig(t)
	if !o.sqlite && os.Getenv(DatabaseURLEnv) != "" {
		cfg.DatabaseURL = PostgresURL(t)
	}
	for _, f := range o.configure {
		f(&cfg)
	}
	h := Start(t, cfg)
	h.Freeze()
	return h
}

// NewConfig is the configuration New starts from: a temporary data directory holding a new
// master key, logs discarded, the store SQLite.
func NewConfig(t testing.TB) server.Config {
	t.Helper()
	dir := t.TempDir()
	mk := filepath.Join(dir, "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	return server.Config{DataDir: dir, MasterKeyFile: mk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// Start opens a server with cfg exactly and serves its API behind httptest. Its clock is the
// real one (New freezes it); several Starts over one database are several processes.
func Start(t testing.TB, cfg server.Config) *Harness {
	t.Helper()
	s, err := server.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &Harness{T: t, Server: s, DataDir: cfg.DataDir, Config: cfg, now: time.Now().UTC()}
	h.srv = httptest.NewServer(s.API.Handler())
	h.URL = h.srv.URL
	t.Cleanup(h.Close)
	return h
}

// Attach is a Harness for a server the test opened and serves itself at url (with Run, say);
// the test closes it.
func Attach(t testing.TB, s *server.Server, url string) *Harness {
	return &Harness{T: t, Server: s, URL: url, now: time.Now().UTC()}
}

// Close stops the HTTP listener and closes the server, once; a test that restarts a server
// over the same data directory closes the first before starting the second.
func (h *Harness) Close() {
	h.closed.Do(func() {
		if h.srv != nil {
			h.srv.Close()
			h.Server.Close()
		}
	})
}

// Freeze makes the harness clock the server's: the API's and the engine's now is Now, moved
// only by Advance. New freezes; Start leaves the real clock.
func (h *Harness) Freeze() {
	h.Server.API.Now = h.Now
	h.Server.Engine.Services().Now = h.Now
}

// PostgresURL returns LATCHKEY_TEST_DATABASE_URL narrowed to a new, empty schema, dropped when
// the test ends; without the variable the test is skipped.
func PostgresURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(DatabaseURLEnv)
	if url == "" {
		t.Skip(DatabaseURLEnv + " not set: set it to a PostgreSQL URL to run this test")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("PostgreSQL unreachable: %v", err)
	}
	schema := "lk_srv_" + strings.ReplaceAll(id.New(), "-", "")[:16]
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}

// Now is the harness clock: the moment New ran, moved by Advance.
func (h *Harness) Now() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

// Advance moves the harness clock forward by d.
func (h *Harness) Advance(d time.Duration) {
	h.mu.Lock()
	h.now = h.now.Add(d)
	h.mu.Unlock()
}

// OnSQLite reports whether the store is the data directory's SQLite database (DatabaseBytes
// can be read).
func (h *Harness) OnSQLite() bool { return h.Config.DatabaseURL == "" }

// DatabaseBytes is the content of the SQLite database and its write-ahead log, for tests that
// look for secrets in the clear. It fails the test when there is no such file: a harness on
// PostgreSQL (pass SQLite to New).
func (h *Harness) DatabaseBytes() []byte {
	h.T.Helper()
	var out []byte
	for _, name := range []string{server.DatabaseFile, server.DatabaseFile + "-wal"} {
		b, _ := os.ReadFile(filepath.Join(h.DataDir, name))
		out = append(out, b...)
	}
	if len(out) == 0 {
		h.T.Fatalf("no SQLite database in %s: open the harness with servertest.SQLite()", h.DataDir)
	}
	return out
}
