package activity

import (
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/store"
)

// lostWrites is the harness's store whose next writes fail as a lost PostgreSQL connection does
// (store.ErrUnavailable), for as many as fail says.
type lostWrites struct {
	store.Store
	fail atomic.Int32
}

func (l *lostWrites) Update(ctx context.Context, fn func(store.Tx) error) error {
	return l.Store.Update(ctx, func(tx store.Tx) error { return fn(&lostTx{Tx: tx, l: l}) })
}

type lostTx struct {
	store.Tx
	l *lostWrites
}

func (t *lostTx) Put(ctx context.Context, rec store.Record, keys ...store.Key) error {
	if t.l.fail.Add(-1) >= 0 {
		return store.Unavailable(io.ErrUnexpectedEOF)
	}
	return t.Tx.Put(ctx, rec, keys...)
}

// TestStoreLostInHandlerIsNotAFailure: when the store is lost under a handler, the activity is
// not recorded FAILED (the request did nothing wrong): the error leaves the transaction's
// function for the store to run it again, and the request is answered 503 only if the store
// does not come back; the same bytes then complete.
func TestStoreLostInHandlerIsNotAFailure(t *testing.T) {
	h := newHarness(t)
	c := h.org(1, 1)[0]
	lw := &lostWrites{Store: h.st}
	h.eng.svc.Store = lw
	lw.fail.Store(1)
	raw := h.body(c, "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "t", "userIds": []string{}})
	_, err := h.send(c, "create_user_tag", raw)
	wantCode(t, err, apierr.Unavailable, "")
	var n int
	if err := h.st.View(context.Background(), func(r store.Reader) (err error) {
		n, err = r.CountActivities(context.Background(), c.Target.ID,
			store.ActivityFilter{Statuses: []string{StatusFailed}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d FAILED activities recorded for a lost store", n)
	}
	out, err := h.send(c, "create_user_tag", raw)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, out, StatusCompleted)
}
