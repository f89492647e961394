package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/costtest"
	"github.com/latchkey/latchkey/internal/store"
)

// read runs fn in a View and then in an Update (reads inside a transaction go through the
// driver's transaction-checked reader).
func read(t *testing.T, s store.Store, fn func(mode string, r store.Reader) error) {
	t.Helper()
	ctx := context.Background()
	if err := s.View(ctx, func(r store.Reader) error { return fn("View", r) }); err != nil {
		t.Fatalf("View: %v", err)
	}
	if err := s.Update(ctx, func(tx store.Tx) error { return fn("Update", tx) }); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

// sized is n bytes of JSON-ish data naming id.
func sized(id string, n int) []byte {
	d := []byte(`{"id":"` + id + `","pad":"`)
	return append(append(d, bytes.Repeat([]byte("x"), max(0, n-len(d)-2))...), `"}`...)
}

// testListRecordsByBytes: List with MaxBytes ends a page before the record that would take the
// sum of the page's Data over MaxBytes, always keeps the first, keeps the records nearest a
// Before cursor, and paging on from the last record (or back from the first) visits every
// record once.
func testListRecordsByBytes(t *testing.T, s store.Store) {
	ctx := context.Background()
	// a..h in creation order, Data of these sizes; c and d share a timestamp.
	sizes := map[string]int{"a": 100, "b": 100, "c": 300, "d": 100, "e": 1000, "f": 100, "g": 100, "h": 100}
	at := map[string]int{"a": 0, "b": 1, "c": 2, "d": 2, "e": 3, "f": 4, "g": 5, "h": 6}
	update(t, s, func(tx store.Tx) error {
		for _, id := range []string{"h", "c", "a", "e", "g", "b", "d", "f"} {
			r := store.Record{Kind: "wallet", ID: id, OrgID: "o1", Data: sized(id, sizes[id]),
				CreatedAt: base.Add(time.Duration(at[id]) * time.Millisecond)}
			r.UpdatedAt = r.CreatedAt
			if err := tx.Insert(ctx, r); err != nil {
				return err
			}
		}
		return tx.Insert(ctx, store.Record{Kind: "wallet", ID: "z", OrgID: "o2", Data: sized("z", 10)})
	})
	tests := []struct {
		name string
		opts store.ListOptions
		want string
	}{
		{"bytes end the page", store.ListOptions{MaxBytes: 250}, "a,b"},
		{"bytes and limit: limit first", store.ListOptions{MaxBytes: 10000, Limit: 3}, "a,b,c"},
		{"bytes and limit: bytes first", store.ListOptions{MaxBytes: 500, Limit: 5}, "a,b,c"},
		{"exactly full", store.ListOptions{MaxBytes: 500}, "a,b,c"},
		{"a record over the bound comes alone", store.ListOptions{MaxBytes: 500, After: "d"}, "e"},
		{"the first always comes", store.ListOptions{MaxBytes: 1, After: "c"}, "d"},
		{"after", store.ListOptions{MaxBytes: 1200, After: "d"}, "e,f,g"},
		{"descending", store.ListOptions{MaxBytes: 300, Desc: true}, "h,g,f"},
		{"before keeps the nearest", store.ListOptions{MaxBytes: 400, Before: "e"}, "c,d"},
		{"before keeps the nearest, the first always", store.ListOptions{MaxBytes: 250, Before: "e"}, "d"},
		{"before keeps the nearest, descending", store.ListOptions{MaxBytes: 1150, Before: "d", Desc: true},
			"f,e"},
		{"unbounded", store.ListOptions{}, "a,b,c,d,e,f,g,h"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read(t, s, func(mode string, r store.Reader) error {
				got, err := r.List(ctx, "wallet", "o1", tc.opts)
				if err != nil {
					return err
				}
				if ids(got) != tc.want {
					t.Errorf("%s: List = %q, want %q", mode, ids(got), tc.want)
				}
				for _, rec := range got {
					if !bytes.Equal(rec.Data, sized(rec.ID, sizes[rec.ID])) || rec.OrgID != "o1" ||
						!rec.CreatedAt.Equal(base.Add(time.Duration(at[rec.ID])*time.Millisecond)) {
						t.Errorf("%s: record %s read as %+v", mode, rec.ID, rec)
					}
				}
				return nil
			})
		})
	}
	for _, desc := range []bool{false, true} {
		for _, maxBytes := range []int{1, 150, 400, 1100} {
			var fwd, back []string
			read(t, s, func(mode string, r store.Reader) error {
				fwd, back = nil, nil
				for cursor := ""; ; {
					page, err := r.List(
						ctx,
						"wallet",
						"o1",
						store.ListOptions{After: cursor, MaxBytes: maxBytes, Desc: desc},
					)
					if err != nil || len(page) == 0 {
						return err
					}
					fwd = append(fwd, ids(page))
					cursor = page[len(page)-1].ID
				}
			})
			read(t, s, func(mode string, r store.Reader) error {
				back = nil
				last, err := r.List(ctx, "wallet", "o1", store.ListOptions{Limit: 1, Desc: !desc})
				if err != nil {
					return err
				}
				back = []string{last[0].ID}
				for cursor := last[0].ID; ; {
					page, err := r.List(
						ctx,
						"wallet",
						"o1",
						store.ListOptions{Before: cursor, MaxBytes: maxBytes, Desc: desc},
					)
					if err != nil || len(page) == 0 {
						return err
					}
					back = append([]string{ids(page)}, back...)
					cursor = page[0].ID
				}
			})
			want := "a,b,c,d,e,f,g,h"
			if desc {
				want = "h,g,f,e,d,c,b,a"
			}
			if got := strings.Join(fwd, ","); got != want {
				t.Errorf("desc %v, MaxBytes %d: paging after the last of each page: %v", desc, maxBytes, fwd)
			}
			if got := strings.Join(back, ","); got != want {
				t.Errorf("desc %v, MaxBytes %d: paging before the first of each page: %v", desc, maxBytes, back)
			}
		}
	}
}

// testListActivitiesByBytes: ListActivities with MaxBytes pages as List does (newest first),
// with the filters; ListActivityHeads lists the same activities without their Data, with its
// size.
func testListActivitiesByBytes(t *testing.T, s store.Store) {
	ctx := context.Background()
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	// Newest first: f, e, d, c, b, a; sizes 100, 100, 1000, 100, 300, 100.
	sizes := map[string]int{"a": 100, "b": 300, "c": 100, "d": 1000, "e": 100, "f": 100}
	status := map[string]string{"a": completed, "b": failed, "c": completed, "d": completed, "e": pending,
		"f": completed}
	update(t, s, func(tx store.Tx) error {
		for i, id := range []string{"a", "b", "c", "d", "e", "f"} {
			a := activity(id, "o1", "f"+id, status[id], "SIGN", ms(i))
			a.Data = sized(id, sizes[id])
			if err := tx.PutActivity(ctx, a); err != nil {
				return err
			}
		}
		return tx.PutActivity(ctx, activity("x", "o2", "fx", completed, "SIGN", ms(9)))
	})
	tests := []struct {
		name string
		org  string
		f    store.ActivityFilter
		want string
	}{
		{"bytes end the page", "o1", store.ActivityFilter{MaxBytes: 250}, "f,e"},
		{"an activity over the bound comes alone", "o1", store.ActivityFilter{MaxBytes: 250, After: "e"}, "d"},
		{"then the next page", "o1", store.ActivityFilter{MaxBytes: 250, After: "d"}, "c"},
		{"limit first", "o1", store.ActivityFilter{MaxBytes: 10000, Limit: 2}, "f,e"},
		{"before keeps the nearest", "o1", store.ActivityFilter{MaxBytes: 150, Before: "d"}, "e"},
		{"before", "o1", store.ActivityFilter{MaxBytes: 200, Before: "d"}, "f,e"},
		{"before keeps the nearest, the first always", "o1", store.ActivityFilter{MaxBytes: 10, Before: "c"}, "d"},
		{"with a filter", "o1", store.ActivityFilter{MaxBytes: 1150, Statuses: []string{completed}}, "f,d"},
		{"every organization", "", store.ActivityFilter{MaxBytes: 150}, "x,f"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read(t, s, func(mode string, r store.Reader) error {
				got, err := r.ListActivities(ctx, tc.org, tc.f)
				if err != nil {
					return err
				}
				if activityIDs(got) != tc.want {
					t.Errorf("%s: ListActivities = %q, want %q", mode, activityIDs(got), tc.want)
				}
				for _, a := range got {
					if a.ID != "x" && (!bytes.Equal(a.Data, sized(a.ID, sizes[a.ID])) || a.Status != status[a.ID] ||
						a.Fingerprint != "f"+a.ID) {
						t.Errorf("%s: activity %s read as %+v", mode, a.ID, a)
					}
				}
				return nil
			})
		})
	}
	var pages []string
	read(t, s, func(mode string, r store.Reader) error {
		pages = nil
		for cursor := ""; ; {
			page, err := r.ListActivities(ctx, "o1", store.ActivityFilter{After: cursor, MaxBytes: 350, Limit: 3})
			if err != nil || len(page) == 0 {
				return err
			}
			pages = append(pages, activityIDs(page))
			cursor = page[len(page)-1].ID
		}
	})
	if got := strings.Join(pages, "|"); got != "f,e|d|c|b|a" {
		t.Errorf("pages of at most 3 activities and 350 bytes: %s", got)
	}

	read(t, s, func(mode string, r store.Reader) error {
		for _, f := range []store.ActivityFilter{{}, {Limit: 2, After: "e"}, {Before: "c", Limit: 2},
			{Statuses: []string{completed}}, {Types: []string{"SIGN"}, Since: ms(3)}} {
			full, err := r.ListActivities(ctx, "o1", f)
			if err != nil {
				return err
			}
			heads, err := r.ListActivityHeads(ctx, "o1", f)
			if err != nil {
				return err
			}
			if len(heads) != len(full) {
				t.Fatalf("%s: %+v: %d heads, %d activities", mode, f, len(heads), len(full))
			}
			for i, h := range heads {
				a := full[i]
				if h.ID != a.ID || h.OrgID != a.OrgID || h.Status != a.Status || h.Type != a.Type ||
					!h.CreatedAt.Equal(a.CreatedAt) || !h.UpdatedAt.Equal(a.UpdatedAt) || h.Size != len(a.Data) {
					t.Errorf("%s: %+v: head %+v, activity %+v", mode, f, h, a)
				}
			}
		}
		all, err := r.ListActivityHeads(ctx, "", store.ActivityFilter{})
		if err != nil || len(all) != 7 || all[0].ID != "x" {
			t.Errorf("%s: heads of every organization: %+v, %v", mode, all, err)
		}
		return nil
	})
}

// testFilterValues: a filter binds each distinct value once (70,000 copies of one status list
// what one does, on every database), and more than MaxFilterValues distinct values are refused
// with ErrTooManyValues, not a database error.
func testFilterValues(t *testing.T, s store.Store) {
	ctx := context.Background()
	update(t, s, func(tx store.Tx) error {
		if err := tx.PutActivity(ctx, activity("a", "o", "fa", completed, "SIGN", base)); err != nil {
			return err
		}
		return tx.PutActivity(ctx, activity("b", "o", "fb", failed, "CREATE_USER", base.Add(time.Millisecond)))
	})
	repeated := make([]string, 70000)
	for i := range repeated {
		repeated[i] = []string{completed, "ACTIVITY_STATUS_CREATED"}[i%2]
	}
	types := make([]string, 70000)
	for i := range types {
		types[i] = "SIGN"
	}
	distinct := make([]string, store.MaxFilterValues+1)
	for i := range distinct {
		distinct[i] = fmt.Sprintf("ACTIVITY_STATUS_%d", i)
	}
	read(t, s, func(mode string, r store.Reader) error {
		for _, f := range []store.ActivityFilter{{Statuses: repeated}, {Types: types}, {Statuses: repeated, Types: types}} {
			got, err := r.ListActivities(ctx, "o", f)
			if err != nil || activityIDs(got) != "a" {
				t.Errorf("%s: ListActivities with repeated values = %q, %v; want a", mode, activityIDs(got), err)
			}
			heads, err := r.ListActivityHeads(ctx, "o", f)
			if err != nil || len(heads) != 1 {
				t.Errorf("%s: ListActivityHeads with repeated values = %d, %v; want 1", mode, len(heads), err)
			}
			if n, err := r.CountActivities(ctx, "", f); err != nil || n != 1 {
				t.Errorf("%s: CountActivities with repeated values = %d, %v; want 1", mode, n, err)
			}
		}
		if got, err := r.ListActivities(ctx, "o", store.ActivityFilter{Statuses: distinct[:store.MaxFilterValues]}); err != nil ||
			len(got) != 0 {
			t.Errorf("%s: %d distinct statuses: %d, %v", mode, store.MaxFilterValues, len(got), err)
		}
		for _, f := range []store.ActivityFilter{{Statuses: distinct}, {Types: distinct}} {
			if _, err := r.ListActivities(ctx, "o", f); !errors.Is(err, store.ErrTooManyValues) {
				t.Errorf("%s: ListActivities with %d distinct values: %v", mode, len(distinct), err)
			}
			if _, err := r.ListActivityHeads(ctx, "o", f); !errors.Is(err, store.ErrTooManyValues) {
				t.Errorf("%s: ListActivityHeads with %d distinct values: %v", mode, len(distinct), err)
			}
			if _, err := r.CountActivities(ctx, "o", f); !errors.Is(err, store.ErrTooManyValues) {
				t.Errorf("%s: CountActivities with %d distinct values: %v", mode, len(distinct), err)
			}
		}
		return nil
	})
}

// testPagesCostWhatTheyKeep: the memory a page costs does not grow with the rows it does not
// return. A page of ListActivities or List bounded by bytes over 40 large rows costs what it
// costs over 10 (before, every row of the page's Limit was read whole), and ListActivityHeads
// costs the same over rows of 256 KB as over rows of 1 KB.
func testPagesCostWhatTheyKeep(t *testing.T, s store.Store) {
	ctx := context.Background()
	const large, small = 256 << 10, 1 << 10
	fill := func(org string, n, size int) {
		update(t, s, func(tx store.Tx) error {
			for i := range n {
				id := fmt.Sprintf("%s-%03d", org, i)
				a := activity(id, org, "f"+id, completed, "SIGN", base.Add(time.Duration(i)*time.Millisecond))
				a.Data = sized(id, size)
				if err := tx.PutActivity(ctx, a); err != nil {
					return err
				}
				r := rec("wallet", id, org, a.CreatedAt, "")
				r.Data = a.Data
				if err := tx.Insert(ctx, r); err != nil {
					return err
				}
			}
			return nil
		})
	}
	fill("ten", 10, large)
	fill("forty", 40, large)
	fill("small", 40, small)
	measure := func(what string, read func(r store.Reader) (int, error)) int64 {
		var n int
		var err error
		run := func() { err = s.View(ctx, func(r store.Reader) error { n, err = read(r); return err }) }
		alloc := costtest.Allocated(run)
		for range 2 { // the least of three: the drivers' pools make one measure vary
			alloc = min(alloc, costtest.Allocated(run))
		}
		if err != nil || n == 0 {
			t.Fatalf("%s: %d rows, %v", what, n, err)
		}
		return alloc
	}
	page := func(org string) func(r store.Reader) (int, error) {
		return func(r store.Reader) (int, error) {
			as, err := r.ListActivities(ctx, org, store.ActivityFilter{Limit: 100, MaxBytes: 4 * large})
			return len(as), err
		}
	}
	records := func(org string) func(r store.Reader) (int, error) {
		return func(r store.Reader) (int, error) {
			rs, err := r.List(ctx, "wallet", org, store.ListOptions{Limit: 100, MaxBytes: 4 * large})
			return len(rs), err
		}
	}
	heads := func(org string) func(r store.Reader) (int, error) {
		return func(r store.Reader) (int, error) {
			hs, err := r.ListActivityHeads(ctx, org, store.ActivityFilter{Limit: 100})
			return len(hs), err
		}
	}
	for _, c := range []struct {
		name        string
		base, grown func(r store.Reader) (int, error)
	}{
		{"ListActivities over 10 then 40 rows of 256 KB", page("ten"), page("forty")},
		{"List over 10 then 40 rows of 256 KB", records("ten"), records("forty")},
		{"ListActivityHeads over 40 rows of 1 KB then 256 KB", heads("small"), heads("forty")},
	} {
		measure(c.name, c.base) // warm up: statements, pools
		b, g := measure(c.name, c.base), measure(c.name, c.grown)
		if float64(g) > 1.5*float64(b)+float64(256<<10) {
			t.Errorf("%s: %d bytes allocated, then %d", c.name, b, g)
		}
	}
}

// testListByKey: List with Key keeps the records carrying the key, in the same order and with
// the same cursors, limits and byte bounds as without it; a key value the driver encodes (NUL)
// matches as given.
func testListByKey(t *testing.T, s store.Store) {
	ctx := context.Background()
	// a..f in creation order; a, c, d, f carry ("by", "w\x001"), b and e ("by", "w2"); c and
	// d share a timestamp.
	at := map[string]int{"a": 0, "b": 1, "c": 2, "d": 2, "e": 3, "f": 4}
	value := map[string]string{"a": "w\x001", "b": "w2", "c": "w\x001", "d": "w\x001", "e": "w2", "f": "w\x001"}
	update(t, s, func(tx store.Tx) error {
		for _, id := range []string{"f", "c", "a", "e", "b", "d"} {
			r := store.Record{Kind: "wallet", ID: id, OrgID: "o1", Data: sized(id, 100),
				CreatedAt: base.Add(time.Duration(at[id]) * time.Millisecond)}
			r.UpdatedAt = r.CreatedAt
			if err := tx.Insert(ctx, r, store.Key{Name: "by", Value: value[id]}, store.Key{Name: "other", Value: "x"}); err != nil {
				return err
			}
		}
		// The same key on another kind and in another organization is not listed.
		if err := tx.Insert(ctx, rec("user", "u", "o1", base, "{}"), store.Key{Name: "by", Value: "w\x001"}); err != nil {
			return err
		}
		return tx.Insert(ctx, rec("wallet", "z", "o2", base, "{}"), store.Key{Name: "by", Value: "w\x001"})
	})
	w1 := store.Key{Name: "by", Value: "w\x001"}
	tests := []struct {
		name string
		opts store.ListOptions
		want string
	}{
		{"all", store.ListOptions{Key: w1}, "a,c,d,f"},
		{"other value", store.ListOptions{Key: store.Key{Name: "by", Value: "w2"}}, "b,e"},
		{"no such value", store.ListOptions{Key: store.Key{Name: "by", Value: "w3"}}, ""},
		{"descending", store.ListOptions{Key: w1, Desc: true}, "f,d,c,a"},
		{"limit", store.ListOptions{Key: w1, Limit: 2}, "a,c"},
		{"after", store.ListOptions{Key: w1, After: "c", Limit: 2}, "d,f"},
		{"after a record without the key", store.ListOptions{Key: w1, After: "b"}, "c,d,f"},
		{"before with limit keeps the nearest", store.ListOptions{Key: w1, Before: "f", Limit: 2}, "c,d"},
		{"bytes end the page", store.ListOptions{Key: w1, MaxBytes: 250}, "a,c"},
		{"bytes before", store.ListOptions{Key: w1, Before: "f", MaxBytes: 250}, "c,d"},
		{"unknown cursor", store.ListOptions{Key: w1, After: "nope"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read(t, s, func(mode string, r store.Reader) error {
				got, err := r.List(ctx, "wallet", "o1", tc.opts)
				if err != nil {
					t.Fatalf("%s: List: %v", mode, err)
				}
				if ids(got) != tc.want {
					t.Errorf("%s: List = %q, want %q", mode, ids(got), tc.want)
				}
				return nil
			})
		})
	}
}

// testListOwnersOf: List with OwnerOf keeps the records that own a record carrying the key (the
// sub-organizations of a parent holding a user of some name), paged in order.
func testListOwnersOf(t *testing.T, s store.Store) {
	ctx := context.Background()
	update(t, s, func(tx store.Tx) error {
		for i, id := range []string{"a", "b", "c", "d", "e"} {
			at := base.Add(time.Duration(i) * time.Millisecond)
			if err := tx.Insert(ctx, rec("organization", id, "p", at, "{}")); err != nil {
				return err
			}
			name := "bob"
			if id == "b" || id == "d" || id == "e" {
				name = "al\x00ice"
			}
			if err := tx.Insert(ctx, rec("user", "u"+id, id, at, "{}"), store.Key{Name: "user.name_any", Value: name}); err != nil {
				return err
			}
		}
		// Another parent's organization holding such a user is not listed.
		if err := tx.Insert(ctx, rec("organization", "x", "q", base, "{}")); err != nil {
			return err
		}
		return tx.Insert(ctx, rec("user", "ux", "x", base, "{}"), store.Key{Name: "user.name_any", Value: "al\x00ice"})
	})
	alice := store.Key{Name: "user.name_any", Value: "al\x00ice"}
	tests := []struct {
		name string
		opts store.ListOptions
		want string
	}{
		{"all", store.ListOptions{OwnerOf: alice}, "b,d,e"},
		{"limit", store.ListOptions{OwnerOf: alice, Limit: 2}, "b,d"},
		{"after", store.ListOptions{OwnerOf: alice, After: "c", Limit: 2}, "d,e"},
		{"before", store.ListOptions{OwnerOf: alice, Before: "e", Limit: 1}, "d"},
		{"bytes", store.ListOptions{OwnerOf: alice, MaxBytes: 1}, "b"},
		{"no one", store.ListOptions{OwnerOf: store.Key{Name: "user.name_any", Value: "carol"}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read(t, s, func(mode string, r store.Reader) error {
				got, err := r.List(ctx, "organization", "p", tc.opts)
				if err != nil {
					t.Fatalf("%s: List: %v", mode, err)
				}
				if ids(got) != tc.want {
					t.Errorf("%s: List = %q, want %q", mode, ids(got), tc.want)
				}
				return nil
			})
		})
	}
}
