package metrics

import (
	"math"
	"testing"
	"time"
)

// CommitTotals adds up what Commit recorded for one store, and nothing of another's.
func TestCommitTotals(t *testing.T) {
	m := New()
	if c, n, s := m.CommitTotals("sqlite"); c != 0 || n != 0 || s != 0 {
		t.Fatalf("before any commit: %d, %d, %v", c, n, s)
	}
	m.Commit("sqlite", 3, 2*time.Millisecond)
	m.Commit("sqlite", 29, 4*time.Millisecond)
	m.Commit("postgres", 7, time.Second)
	c, n, s := m.CommitTotals("sqlite")
	if c != 2 || n != 32 || math.Abs(s-0.006) > 1e-9 {
		t.Fatalf("CommitTotals(sqlite) = %d, %d, %v; want 2, 32, 0.006", c, n, s)
	}
	var none *Metrics
	if c, n, s := none.CommitTotals("sqlite"); c != 0 || n != 0 || s != 0 {
		t.Fatalf("nil Metrics: %d, %d, %v", c, n, s)
	}
}
