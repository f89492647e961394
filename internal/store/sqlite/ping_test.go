package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
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
