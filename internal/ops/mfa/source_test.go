package mfa

import (
	"context"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/hot/hottest"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/store"
)

// lookups counts the key look-ups made through a reader.
type lookups struct {
	store.Tx
	n int
}

func (l *lookups) Lookup(ctx context.Context, name, value string) ([]store.Ref, error) {
	l.n++
	return l.Tx.Lookup(ctx, name, value)
}

// TestSourceInTransaction: on SQLite the MFA check inside an activity's transaction reads the
// user's policies from memory while nothing of the organization's MFA policies changed, and
// from the store once one did (committed, or written earlier in the same transaction).
func TestSourceInTransaction(t *testing.T) {
	ctx := context.Background()
	st, v := hottest.SQLite(t, KindMFAPolicy)
	src := Source(NewPolicies(v))
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	const org, user = "org-1", "user-1"
	env := policy.MapEnv{}
	write := func(tx store.Tx, id string) error {
		return save(&activity.Exec{Ctx: ctx, Tx: tx}, &Policy{ID: id, OrgID: org, UserID: user, Condition: "true",
			Steps: [][]activity.AuthMethod{{{Type: activity.MethodAPIKey}}}, CreatedAt: now, UpdatedAt: now})
	}
	// check runs the MFA source in a transaction (after before, in the same one) and returns
	// the policy it requires ("" for none) and how many look-ups it made.
	check := func(before func(store.Tx) error) (string, int) {
		t.Helper()
		var got string
		l := &lookups{}
		if err := st.Update(ctx, func(tx store.Tx) error {
			if before != nil {
				if err := before(tx); err != nil {
					return err
				}
			}
			l.Tx, l.n = tx, 0
			req, err := src(ctx, l, org, user, env)
			if req != nil {
				got = req.PolicyID
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return got, l.n
	}
	if p, n := check(nil); p != "" || n != 1 {
		t.Fatalf("no policies: %q after %d look-ups, want none after 1", p, n)
	}
	if p, n := check(nil); p != "" || n != 0 {
		t.Fatalf("again: %q after %d look-ups, want none after 0 (from memory)", p, n)
	}
	// A policy written earlier in the same transaction is seen (and not cached).
	if p, n := check(func(tx store.Tx) error { return write(tx, "p1") }); p != "p1" || n != 1 {
		t.Fatalf("written in the transaction: %q after %d look-ups, want p1 after 1", p, n)
	}
	if p, n := check(nil); p != "p1" || n != 1 {
		t.Fatalf("after its commit: %q after %d look-ups, want p1 after 1", p, n)
	}
	if p, n := check(nil); p != "p1" || n != 0 {
		t.Fatalf("again: %q after %d look-ups, want p1 after 0", p, n)
	}
	// Deleted: required no more.
	if err := st.Update(ctx, func(tx store.Tx) error { return tx.Delete(ctx, KindMFAPolicy, "p1") }); err != nil {
		t.Fatal(err)
	}
	if p, n := check(nil); p != "" || n != 1 {
		t.Fatalf("after the delete: %q after %d look-ups, want none after 1", p, n)
	}
}
