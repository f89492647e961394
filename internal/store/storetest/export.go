package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// testExport: the store enumerates every record of every kind with its keys, and every
// activity, in byte order of ID whatever the database's collation (store.Exporter); the Tx of
// an Update, where it implements Exporter, sees its own writes; an error from fn stops the
// iteration and comes back as is.
func testExport(t *testing.T, s store.Store) {
	ex, ok := s.(store.Exporter)
	if !ok {
		t.Fatalf("%s store is not a store.Exporter", s.Dialect())
	}
	ctx := context.Background()
	// IDs whose byte order differs from a linguistic collation's ("B" < "_" < "a" < "é").
	ids := []string{"é", "a", "_x", "B", "a-1"}
	update(t, s, func(tx store.Tx) error {
		for i, id := range ids {
			var keys []store.Key
			switch i % 3 {
			case 1:
				keys = []store.Key{{Name: "w.name", Value: "n" + id, Unique: true}, {Name: "w.tag", Value: "t"}}
			case 2:
				keys = []store.Key{{Name: "w.tag", Value: "t"}}
			}
			if err := tx.Put(ctx, rec("w", id, "o"+fmt.Sprint(i%2), base.Add(-time.Duration(i)*time.Second), "data "+id), keys...); err != nil {
				return err
			}
		}
		if err := tx.Put(ctx, store.Record{Kind: "org", ID: "o0", Data: nil}); err != nil {
			return err
		}
		for i, id := range ids {
			fp := ""
			if i%2 == 0 {
				fp = "fp" + id
			}
			if err := tx.PutActivity(ctx, activity(id, "o0", fp, completed, "T", base.Add(time.Duration(i)*time.Second))); err != nil {
				return err
			}
		}
		return nil
	})
	wantOrder := "B,_x,a,a-1,é"
	kinds, err := ex.RecordKinds(ctx)
	if err != nil || len(kinds) != 2 || kinds["w"] != 5 || kinds["org"] != 1 {
		t.Fatalf("RecordKinds = %v, %v", kinds, err)
	}
	var got []string
	err = ex.EachRecord(ctx, "w", func(r store.Record, keys []store.Key) error {
		want := mustGet(t, s, "w", r.ID)
		sameRecord(t, r, want)
		var ks []string
		for _, k := range keys {
			ks = append(ks, fmt.Sprintf("%s=%s/%v", k.Name, k.Value, k.Unique))
		}
		wantKeys := map[string]string{"a": "w.name=na/true,w.tag=t/false", "_x": "w.tag=t/false", "a-1": "w.name=na-1/true,w.tag=t/false"}[r.ID]
		if strings.Join(ks, ",") != wantKeys {
			t.Errorf("keys of %s = %v, want %q", r.ID, ks, wantKeys)
		}
		got = append(got, r.ID)
		return nil
	})
	if err != nil || strings.Join(got, ",") != wantOrder {
		t.Fatalf("EachRecord order = %v, %v; want %s", got, err, wantOrder)
	}
	var org []store.Record
	if err := ex.EachRecord(ctx, "org", func(r store.Record, keys []store.Key) error {
		if keys != nil {
			t.Errorf("keys of a record without keys: %v", keys)
		}
		org = append(org, r)
		return nil
	}); err != nil || len(org) != 1 || len(org[0].Data) != 0 || !org[0].CreatedAt.IsZero() {
		t.Fatalf("EachRecord(org) = %v, %v", org, err)
	}
	if err := ex.EachRecord(ctx, "none", func(store.Record, []store.Key) error { return errors.New("called") }); err != nil {
		t.Fatalf("EachRecord of an absent kind: %v", err)
	}
	got = nil
	if err := ex.EachActivity(ctx, func(a store.Activity) error {
		var stored store.Activity
		err := s.View(ctx, func(r store.Reader) (err error) { stored, err = r.GetActivity(ctx, a.ID); return err })
		if err != nil || a.Fingerprint != stored.Fingerprint || a.OrgID != "o0" || a.Type != "T" ||
			string(a.Data) != string(stored.Data) || !a.CreatedAt.Equal(stored.CreatedAt) {
			t.Errorf("activity %s = %+v, stored %+v (%v)", a.ID, a, stored, err)
		}
		got = append(got, a.ID)
		return nil
	}); err != nil || strings.Join(got, ",") != wantOrder {
		t.Fatalf("EachActivity order = %v, %v; want %s", got, err, wantOrder)
	}
	// An error from fn stops the iteration and is returned.
	stop := errors.New("stop")
	n := 0
	if err := ex.EachRecord(ctx, "w", func(store.Record, []store.Key) error { n++; return stop }); !errors.Is(
		err,
		stop,
	) ||
		n != 1 {
		t.Fatalf("EachRecord with a failing fn: %v after %d", err, n)
	}
	n = 0
	if err := ex.EachActivity(ctx, func(store.Activity) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("EachActivity with a failing fn: %v after %d", err, n)
	}
	// Inside an Update (where the Tx exports), the transaction's own writes are seen.
	err = s.Update(ctx, func(tx store.Tx) error {
		tex, ok := tx.(store.Exporter)
		if !ok {
			return nil
		}
		if err := tx.Put(ctx, rec("w", "new", "o", base, "x")); err != nil {
			return err
		}
		kinds, err := tex.RecordKinds(ctx)
		if err != nil || kinds["w"] != 6 {
			return fmt.Errorf("RecordKinds in the Update = %v, %v", kinds, err)
		}
		n := 0
		if err := tex.EachRecord(ctx, "w", func(store.Record, []store.Key) error { n++; return nil }); err != nil ||
			n != 6 {
			return fmt.Errorf("EachRecord in the Update: %d, %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
