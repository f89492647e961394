package records

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

type thing struct {
	Name string `json:"name"`
}

func TestRoundTripAndErrors(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "r.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	err = st.Update(ctx, func(tx store.Tx) error {
		if err := Save(ctx, tx, "thing", "a", "o1", now, now, thing{"x"}, store.Key{Name: "thing.name", Value: "x", Unique: true}); err != nil {
			return err
		}
		err := Save(
			ctx,
			tx,
			"thing",
			"b",
			"o1",
			now,
			now,
			thing{"x"},
			store.Key{Name: "thing.name", Value: "x", Unique: true},
		)
		if apierr.From(err).Code != apierr.AlreadyExists {
			t.Errorf("taken unique key: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = st.View(ctx, func(r store.Reader) error {
		if v, err := Load[thing](ctx, r, "thing", "o1", "a", "thing"); err != nil || v.Name != "x" {
			t.Errorf("Load = %v, %v", v, err)
		}
		if _, err := Load[thing](ctx, r, "thing", "o2", "a", "thing"); apierr.From(err).Code != apierr.NotFound {
			t.Errorf("another organization's record: %v", err)
		}
		if ids, _ := LookupIDs(ctx, r, "thing.name", "x", "thing", ""); len(ids) != 1 {
			t.Errorf("LookupIDs = %v", ids)
		}
		if all, _ := LookupAll[thing](ctx, r, "thing.name", "x", "thing", "o1"); len(all) != 1 {
			t.Errorf("LookupAll = %v", all)
		}
		if l, _ := List[thing](ctx, r, "thing", "o1", store.ListOptions{}); len(l) != 1 {
			t.Errorf("List = %v", l)
		}
		return nil
	})
}

// lostReader is a store whose connection is lost: every read fails as the drivers report it.
type lostReader struct{ store.Reader }

func (lostReader) Get(context.Context, string, string) (store.Record, error) {
	return store.Record{}, fmt.Errorf("postgres: get record: %w", store.Unavailable(io.ErrUnexpectedEOF))
}

func (lostReader) List(context.Context, string, string, store.ListOptions) ([]store.Record, error) {
	return nil, store.Unavailable(io.ErrUnexpectedEOF)
}

func (lostReader) Lookup(context.Context, string, string) ([]store.Ref, error) {
	return nil, store.Unavailable(io.ErrUnexpectedEOF)
}

// TestStoreLostIsUnavailable: a read that fails because the store is lost is a 503 (code 14),
// not an internal error.
func TestStoreLostIsUnavailable(t *testing.T) {
	ctx := context.Background()
	r := lostReader{}
	_, err := Load[thing](ctx, r, "thing", "o1", "a", "thing")
	if e := apierr.From(err); e.Code != apierr.Unavailable {
		t.Errorf("Load: %d %q", e.Code, e.Message)
	}
	_, err = List[thing](ctx, r, "thing", "o1", store.ListOptions{})
	if e := apierr.From(err); e.Code != apierr.Unavailable {
		t.Errorf("List: %d %q", e.Code, e.Message)
	}
	_, err = LookupIDs(ctx, r, "thing.name", "x", "thing", "")
	if e := apierr.From(err); e.Code != apierr.Unavailable {
		t.Errorf("LookupIDs: %d %q", e.Code, e.Message)
	}
	if e := apierr.From(Err(store.Unavailable(io.EOF), "thing")); e.Code != apierr.Unavailable {
		t.Errorf("Err: %d %q", e.Code, e.Message)
	}
}
