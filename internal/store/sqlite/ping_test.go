package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// TestPingOwnConnection: with every connection of the read pool taken (long pages), Ping and
// Role still answer: /readyz must not call the store unreachable because it is busy.
func TestPingOwnConnection(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"), Options{ReadConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var held []*sql.Conn
	for range 2 {
		c, err := s.rdb.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a bound on a hang, not a timing
	defer cancel()
	if err := s.Ping(pctx); err != nil {
		t.Fatalf("Ping with the read pool taken: %v", err)
	}
	r, err := s.Role(pctx)
	if err != nil || !r.Ready() || r.Role != "embedded" {
		t.Fatalf("Role = %+v, %v", r, err)
	}
}

// TestBusyFileIsUnavailable: a write that cannot take the file (another process holds its write
// lock past the busy timeout) fails with store.ErrUnavailable (a 503), not an internal error.
func TestBusyFileIsUnavailable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	s, err := Open(ctx, path, Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := sql.Open("sqlite", path+"?_busy_timeout=50")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	c, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer c.ExecContext(ctx, "ROLLBACK") //nolint:errcheck
	err = s.Update(ctx, func(tx store.Tx) error {
		return tx.Put(ctx, store.Record{Kind: "k", ID: "x", OrgID: "o", Data: []byte(`{}`)})
	})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Update with the file locked: %v, want ErrUnavailable", err)
	}
}
