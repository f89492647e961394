package wallets

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/hot/hottest"
	"github.com/latchkey/latchkey/internal/store"
)

// countingTx counts the reads made through NoLock.
type countingTx struct {
	store.Tx
	reads int
}

func (t *countingTx) NoLock() store.Reader { return &countingReader{t.Tx.NoLock(), t} }

type countingReader struct {
	store.Reader
	t *countingTx
}

func (r *countingReader) Get(ctx context.Context, kind, id string) (store.Record, error) {
	r.t.reads++
	return r.Reader.Get(ctx, kind, id)
}

// TestStillThereFromMemory: on SQLite, a signing key resolved through the cache is known to be
// still there, inside the activity's transaction, without a read while nothing of its
// organization was written since; once something was (the key deleted, or anything else of
// the organization), the transaction reads the store, and a deleted key is refused.
func TestStillThereFromMemory(t *testing.T) {
	ctx := context.Background()
	st, v := hottest.SQLite(t, KindWallet, KindAccount, KindPrivateKey)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	const org = "org-1"
	put := func(id string) {
		t.Helper()
		if err := st.Update(ctx, func(tx store.Tx) error {
			return save(ctx, tx, KindPrivateKey, id, org, now, now, &PrivateKey{ID: id, OrgID: org, Curve: "CURVE_SECP256K1"})
		}); err != nil {
			t.Fatal(err)
		}
	}
	resolve := func(d Deps, id string) (*SigningKey, unchanged) {
		t.Helper()
		var k *SigningKey
		var same unchanged
		if err := st.View(ctx, func(r store.Reader) (err error) {
			k, same, err = d.resolveSigner(ctx, r, org, id)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return k, same
	}
	check := func(k *SigningKey, same unchanged) (int, error) {
		t.Helper()
		var got error
		ct := &countingTx{}
		if err := st.Update(ctx, func(tx store.Tx) error {
			ct.Tx, ct.reads = tx, 0
			got = k.stillThere(&activity.Exec{Ctx: ctx, Tx: ct}, same)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return ct.reads, got
	}
	d := Deps{Signers: NewSigners(v)}
	put("k1")
	put("k2")

	resolve(d, "k1")
	k1, same := resolve(d, "k1") // from the cache
	if reads, err := check(k1, same); err != nil || reads != 0 {
		t.Fatalf("unchanged organization: stillThere = %v after %d reads, want nil after none", err, reads)
	}
	k2, same2 := resolve(d, "k2")
	if err := st.Update(ctx, func(tx store.Tx) error { return tx.Delete(ctx, KindPrivateKey, "k2") }); err != nil {
		t.Fatal(err)
	}
	if reads, err := check(k2, same2); apierr.From(err).Code != apierr.NotFound || reads != 1 {
		t.Fatalf(
			"key deleted after it was resolved: stillThere = %v after %d reads, want NOT_FOUND after 1",
			err,
			reads,
		)
	}
	// Any other write to the organization's keys also makes the transaction read.
	put("k3")
	if reads, err := check(k1, same); err != nil || reads != 1 {
		t.Fatalf("organization written since: stillThere = %v after %d reads, want nil after 1", err, reads)
	}
	// Without the cache, always a read.
	k1, same = resolve(Deps{}, "k1")
	if reads, err := check(k1, same); err != nil || reads != 1 {
		t.Fatalf("no cache: stillThere = %v after %d reads, want nil after 1", err, reads)
	}
}

// failingReader fails every read as a lost store does.
type failingReader struct{ store.Reader }

func (failingReader) Get(context.Context, string, string) (store.Record, error) {
	return store.Record{}, store.ErrUnavailable
}

type failingTx struct{ store.Tx }

func (t failingTx) NoLock() store.Reader { return failingReader{t.Tx.NoLock()} }

// TestStillThereStoreFailure: a store lost while the key is checked is the store's failure,
// returned as it is (the engine retries it, or answers 503), never a 404 saying the key was
// deleted.
func TestStillThereStoreFailure(t *testing.T) {
	ctx := context.Background()
	st, _ := hottest.SQLite(t, KindWallet, KindAccount, KindPrivateKey)
	k := &SigningKey{Kind: KindPrivateKey, ID: "pk-1"}
	var got error
	if err := st.Update(ctx, func(tx store.Tx) error {
		got = k.stillThere(&activity.Exec{Ctx: ctx, Tx: failingTx{tx}}, nil)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(got, store.ErrUnavailable) {
		t.Fatalf("stillThere over a lost store = %v, want store.ErrUnavailable", got)
	}
	if e := apierr.From(got); e.Code == apierr.NotFound {
		t.Fatalf("stillThere over a lost store answers %v, want no 404", e)
	}
}
