package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// Run runs every conformance test against stores made by open. open must return a fresh,
// empty store and arrange for it to be closed when the test ends (closing it twice must be
// harmless).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s store.Store)
	}{
		{"RecordLifecycle", testRecordLifecycle},
		{"TimesRoundTripInUTC", testTimes},
		{"InsertDuplicateFails", testInsertDuplicate},
		{"UniqueKeyTaken", testUniqueKeyTaken},
		{"PutReplacesKeys", testPutReplacesKeys},
		{"LookupNonUniqueKey", testLookupNonUnique},
		{"KeyValuesHoldAnyString", testKeyValuesHoldAnyString},
		{"ListOrderAndPaging", testListPaging},
		{"ListByKey", testListByKey},
		{"ListOwnersOf", testListOwnersOf},
		{"ActivityFingerprints", testActivityFingerprints},
		{"ListActivitiesFilters", testListActivities},
		{"ListRecordsBoundedByBytes", testListRecordsByBytes},
		{"ListActivitiesBoundedByBytes", testListActivitiesByBytes},
		{"FilterValuesDistinctAndBounded", testFilterValues},
		{"PagesCostWhatTheyKeep", testPagesCostWhatTheyKeep},
		{"SavepointRollbackKeepsOuterWrites", testSavepoint},
		{"FailedUpdateLeavesNothing", testFailedUpdate},
		{"TxContinuesAfterAlreadyExists", testTxContinuesAfterConflict},
		{"ReadsInsideUpdateSeeOwnWrites", testReadOwnWrites},
		{"ViewDoesNotSeeUncommittedWrites", testViewIsolation},
		{"ConcurrentCounterNoLostUpdates", testConcurrentCounter},
		{"ConcurrentLimitedInsertsHoldTheLimit", testLimitedInserts},
		{"NoLockReadsDoNotQueue", testNoLock},
		{"ConcurrentInsertOfSameIDOneWins", testInsertRace},
		{"ConcurrentUniqueKeyOneWins", testUniqueKeyRace},
		{"ConcurrentMixedOutcomesStayIsolated", testMixedOutcomes},
		{"PanicInUpdateRollsBack", testPanic},
		{"CancelledContext", testCancelledContext},
		{"ErrorsDoNotLeakData", testErrorsDoNotLeakData},
		{"Closed", testClosed},
		{"CountKindAcrossOrganizations", testCountKind},
		{"ExportEnumeratesEverything", testExport},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, open(t))
		})
	}
}

var base = time.Date(2026, 11, 22, 8, 0, 0, 123456789, time.UTC)

func rec(kind, id, org string, at time.Time, data string) store.Record {
	return store.Record{Kind: kind, ID: id, OrgID: org, Data: []byte(data), CreatedAt: at, UpdatedAt: at}
}

func update(t *testing.T, s store.Store, fn func(tx store.Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func get(t *testing.T, s store.Store, kind, id string) (store.Record, error) {
	t.Helper()
	var r store.Record
	err := s.View(context.Background(), func(rd store.Reader) (err error) {
		r, err = rd.Get(context.Background(), kind, id)
		return err
	})
	return r, err
}

func mustGet(t *testing.T, s store.Store, kind, id string) store.Record {
	t.Helper()
	r, err := get(t, s, kind, id)
	if err != nil {
		t.Fatalf("Get(%s, %s): %v", kind, id, err)
	}
	return r
}

func mustNotFound(t *testing.T, s store.Store, kind, id string) {
	t.Helper()
	if _, err := get(t, s, kind, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(%s, %s) = %v, want ErrNotFound", kind, id, err)
	}
}

func lookup(t *testing.T, s store.Store, name, value string) []string {
	t.Helper()
	var ids []string
	err := s.View(context.Background(), func(rd store.Reader) error {
		refs, err := rd.Lookup(context.Background(), name, value)
		for _, r := range refs {
			ids = append(ids, r.Kind+"/"+r.ID+"@"+r.OrgID)
		}
		return err
	})
	if err != nil {
		t.Fatalf("Lookup(%s, %s): %v", name, value, err)
	}
	sortStrings(ids)
	return ids
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func sameRecord(t *testing.T, got, want store.Record) {
	t.Helper()
	if got.Kind != want.Kind || got.ID != want.ID || got.OrgID != want.OrgID || !bytes.Equal(got.Data, want.Data) ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("record = %s/%s@%s %q %v %v, want %s/%s@%s %q %v %v",
			got.Kind, got.ID, got.OrgID, got.Data, got.CreatedAt, got.UpdatedAt,
			want.Kind, want.ID, want.OrgID, want.Data, want.CreatedAt, want.UpdatedAt)
	}
}

func ids(recs []store.Record) string {
	var s []string
	for _, r := range recs {
		s = append(s, r.ID)
	}
	return strings.Join(s, ",")
}

func activityIDs(as []store.Activity) string {
	var s []string
	for _, a := range as {
		s = append(s, a.ID)
	}
	return strings.Join(s, ",")
}

func testRecordLifecycle(t *testing.T, s store.Store) {
	ctx := context.Background()
	r1 := rec("user", "u1", "o1", base, `{"v":1}`)
	update(t, s, func(tx store.Tx) error { return tx.Insert(ctx, r1) })
	sameRecord(t, mustGet(t, s, "user", "u1"), r1)
	mustNotFound(t, s, "user", "u2")
	mustNotFound(t, s, "wallet", "u1") // ids are per kind

	r1b := r1
	r1b.Data = []byte(`{"v":2}`)
	r1b.UpdatedAt = base.Add(time.Second)
	update(t, s, func(tx store.Tx) error { return tx.Put(ctx, r1b) })
	sameRecord(t, mustGet(t, s, "user", "u1"), r1b)

	// A Put without CreatedAt keeps the stored one.
	r1c := r1b
	r1c.CreatedAt = time.Time{}
	update(t, s, func(tx store.Tx) error { return tx.Put(ctx, r1c) })
	sameRecord(t, mustGet(t, s, "user", "u1"), r1b)

	// Put of a new record inserts it.
	r2 := rec("user", "u2", "o1", base, ``)
	update(t, s, func(tx store.Tx) error { return tx.Put(ctx, r2) })
	got := mustGet(t, s, "user", "u2")
	if len(got.Data) != 0 {
		t.Fatalf("empty data came back as %q", got.Data)
	}

	update(t, s, func(tx store.Tx) error { return tx.Delete(ctx, "user", "u1") })
	mustNotFound(t, s, "user", "u1")
	err := s.Update(ctx, func(tx store.Tx) error { return tx.Delete(ctx, "user", "u1") })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second Delete = %v, want ErrNotFound", err)
	}
	// Delete then Insert of the same id in one transaction.
	update(t, s, func(tx store.Tx) error {
		if err := tx.Delete(ctx, "user", "u2"); err != nil {
			return err
		}
		return tx.Insert(ctx, rec("user", "u2", "o2", base, "again"))
	})
	if got := mustGet(t, s, "user", "u2"); got.OrgID != "o2" {
		t.Fatalf("re-inserted record org = %q", got.OrgID)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if d := s.Dialect(); d != "sqlite" && d != "postgres" {
		t.Fatalf("Dialect() = %q", d)
	}
}

func testTimes(t *testing.T, s store.Store) {
	ctx := context.Background()
	loc := time.FixedZone("X", 5*3600+1800)
	tests := []struct {
		name string
		at   time.Time
	}{
		{"nanoseconds", time.Date(2026, 1, 2, 3, 4, 5, 999999999, loc)},
		{"epoch", time.Unix(0, 0)},
		{"before epoch", time.Date(1960, 5, 6, 7, 8, 9, 1, time.UTC)},
		{"zero", time.Time{}},
		{"far future", time.Date(2261, 12, 31, 23, 59, 59, 999999999, time.UTC)},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := "t" + strconv.Itoa(i)
			r := store.Record{Kind: "k", ID: id, OrgID: "o", CreatedAt: tc.at, UpdatedAt: tc.at}
			a := store.Activity{ID: id, OrgID: "o", Status: "S", Type: "T", CreatedAt: tc.at, UpdatedAt: tc.at}
			update(t, s, func(tx store.Tx) error {
				if err := tx.Put(ctx, r); err != nil {
					return err
				}
				return tx.PutActivity(ctx, a)
			})
			got := mustGet(t, s, "k", id)
			var ga store.Activity
			if err := s.View(ctx, func(rd store.Reader) (err error) { ga, err = rd.GetActivity(ctx, id); return err }); err != nil {
				t.Fatal(err)
			}
			for _, g := range []time.Time{got.CreatedAt, got.UpdatedAt, ga.CreatedAt, ga.UpdatedAt} {
				if !g.Equal(tc.at) {
					t.Fatalf("time = %v, want %v", g, tc.at)
				}
				if !tc.at.IsZero() && g.Location() != time.UTC {
					t.Fatalf("time %v not in UTC", g)
				}
				if tc.at.IsZero() && !g.IsZero() {
					t.Fatalf("zero time came back as %v", g)
				}
			}
		})
	}
	// Out of the representable range: refused, not silently wrapped.
	err := s.Update(ctx, func(tx store.Tx) error {
		return tx.Put(ctx, rec("k", "bad", "o", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), ""))
	})
	if err == nil {
		t.Fatal("Put with a year-3000 time succeeded")
	}
}

func testInsertDuplicate(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := rec("wallet", "w1", "o1", base, "first")
	update(t, s, func(tx store.Tx) error { return tx.Insert(ctx, r, store.Key{Name: "wallet.name", Value: "a"}) })
	err := s.Update(ctx, func(tx store.Tx) error {
		return tx.Insert(ctx, rec("wallet", "w1", "o2", base, "second"), store.Key{Name: "wallet.name", Value: "b"})
	})
	if !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("duplicate Insert = %v, want ErrAlreadyExists", err)
	}
	sameRecord(t, mustGet(t, s, "wallet", "w1"), r)
	if got := lookup(t, s, "wallet.name", "b"); len(got) != 0 {
		t.Fatalf("failed Insert left key: %v", got)
	}
	if got := lookup(t, s, "wallet.name", "a"); len(got) != 1 {
		t.Fatalf("failed Insert removed key: %v", got)
	}
}

func testUniqueKeyTaken(t *testing.T, s store.Store) {
	ctx := context.Background()
	email := store.Key{Name: "user.email", Value: "a@example.com", Unique: true}
	tag := store.Key{Name: "user.tag", Value: "t"}
	a := rec("user", "a", "o1", base, "A")
	update(t, s, func(tx store.Tx) error { return tx.Insert(ctx, a, email, tag) })

	tests := []struct {
		name  string
		write func(tx store.Tx) error
	}{
		{"Insert of a new record", func(tx store.Tx) error {
			return tx.Insert(ctx, rec("user", "b", "o1", base, "B"), store.Key{Name: "user.tag", Value: "u"}, email)
		}},
		{"Put of a new record", func(tx store.Tx) error {
			return tx.Put(ctx, rec("user", "b", "o1", base, "B"), email)
		}},
		{"Insert under another kind", func(tx store.Tx) error {
			return tx.Insert(ctx, rec("admin", "a", "o1", base, "B"), email)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Update(ctx, tc.write)
			if !errors.Is(err, store.ErrAlreadyExists) {
				t.Fatalf("got %v, want ErrAlreadyExists", err)
			}
			mustNotFound(t, s, "user", "b")
			mustNotFound(t, s, "admin", "a")
			if got := lookup(t, s, "user.email", "a@example.com"); strings.Join(got, " ") != "user/a@o1" {
				t.Fatalf("key owners = %v", got)
			}
			if got := lookup(t, s, "user.tag", "u"); len(got) != 0 {
				t.Fatalf("half-written keys: %v", got)
			}
		})
	}

	// Put of an existing record taking another's unique key leaves it as it was.
	b := rec("user", "b", "o1", base, "B")
	bKey := store.Key{Name: "user.email", Value: "b@example.com", Unique: true}
	update(t, s, func(tx store.Tx) error { return tx.Insert(ctx, b, bKey) })
	err := s.Update(ctx, func(tx store.Tx) error {
		b2 := b
		b2.Data = []byte("B2")
		if err := tx.Put(ctx, b2, email); err != nil {
			return err
		}
		return nil
	})
	if !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("Put taking a key = %v, want ErrAlreadyExists", err)
	}
	sameRecord(t, mustGet(t, s, "user", "b"), b)
	if got := lookup(t, s, "user.email", "b@example.com"); strings.Join(got, " ") != "user/b@o1" {
		t.Fatalf("b's key lost: %v", got)
	}
	// The same unique key given twice in one Put is one key.
	update(t, s, func(tx store.Tx) error { return tx.Put(ctx, b, bKey, bKey) })
	// A record may keep its own unique key across Puts.
	update(t, s, func(tx store.Tx) error { return tx.Put(ctx, a, email, tag) })
}

func testPutReplacesKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	k := func(n, v string, u bool) store.Key { return store.Key{Name: n, Value: v, Unique: u} }
	a := rec("api_key", "k1", "o1", base, "")
	update(t, s, func(tx store.Tx) error { return tx.Put(ctx, a, k("pub", "P1", true), k("label", "L1", false)) })
	a.OrgID = "o2"
	update(t, s, func(tx store.Tx) error { return tx.Put(ctx, a, k("pub", "P2", true), k("label", "L2", false)) })
	for _, tc := range []struct{ name, value, want string }{
		{"pub", "P1", ""}, {"label", "L1", ""}, {"pub", "P2", "api_key/k1@o2"}, {"label", "L2", "api_key/k1@o2"},
	} {
		if got := strings.Join(lookup(t, s, tc.name, tc.value), " "); got != tc.want {
			t.Errorf("Lookup(%s, %s) = %q, want %q", tc.name, tc.value, got, tc.want)
		}
	}
	// The freed unique key can now go to another record.
	update(t, s, func(tx store.Tx) error {
		return tx.Insert(ctx, rec("api_key", "k2", "o1", base, ""), k("pub", "P1", true))
	})
	// Put with no keys drops them all; Delete drops them too.
	update(t, s, func(tx store.Tx) error { return tx.Put(ctx, a) })
	update(t, s, func(tx store.Tx) error { return tx.Delete(ctx, "api_key", "k2") })
	for _, kv := range [][2]string{{"pub", "P1"}, {"pub", "P2"}, {"label", "L2"}} {
		if got := lookup(t, s, kv[0], kv[1]); len(got) != 0 {
			t.Errorf("Lookup(%s, %s) = %v after removal", kv[0], kv[1], got)
		}
	}
	// A deleted record's unique key is free again, in the same transaction.
	update(t, s, func(tx store.Tx) error {
		if err := tx.Put(ctx, rec("x", "1", "o", base, ""), k("u", "v", true)); err != nil {
			return err
		}
		if err := tx.Delete(ctx, "x", "1"); err != nil {
			return err
		}
		return tx.Insert(ctx, rec("x", "2", "o", base, ""), k("u", "v", true))
	})
	if got := strings.Join(lookup(t, s, "u", "v"), " "); got != "x/2@o" {
		t.Fatalf("Lookup = %q", got)
	}
}

func testLookupNonUnique(t *testing.T, s store.Store) {
	ctx := context.Background()
	tag := store.Key{Name: "user.tag", Value: "admins"}
	update(t, s, func(tx store.Tx) error {
		for _, id := range []string{"u3", "u1", "u2"} {
			if err := tx.Insert(ctx, rec("user", id, "o1", base, ""), tag); err != nil {
				return err
			}
		}
		return tx.Insert(ctx, rec("user", "u4", "o1", base, ""), store.Key{Name: "user.tag", Value: "other"})
	})
	if got := strings.Join(lookup(t, s, "user.tag", "admins"), " "); got != "user/u1@o1 user/u2@o1 user/u3@o1" {
		t.Fatalf("Lookup = %q", got)
	}
	if got := lookup(t, s, "user.tag", "nobody"); len(got) != 0 {
		t.Fatalf("Lookup of a missing key = %v", got)
	}
}

func testListPaging(t *testing.T, s store.Store) {
	ctx := context.Background()
	// a..e in creation order; b and c share a timestamp, so id breaks the tie.
	at := map[string]time.Duration{"a": 0, "b": 1, "c": 1, "d": 2, "e": 3}
	update(t, s, func(tx store.Tx) error {
		for _, id := range []string{"d", "c", "e", "a", "b"} {
			if err := tx.Insert(ctx, rec("wallet", id, "o1", base.Add(at[id]*time.Millisecond), id)); err != nil {
				return err
			}
		}
		// Noise: other organization, other kind.
		if err := tx.Insert(ctx, rec("wallet", "z", "o2", base, "")); err != nil {
			return err
		}
		return tx.Insert(ctx, rec("user", "y", "o1", base, ""))
	})
	tests := []struct {
		name string
		opts store.ListOptions
		want string
	}{
		{"all ascending", store.ListOptions{}, "a,b,c,d,e"},
		{"all descending", store.ListOptions{Desc: true}, "e,d,c,b,a"},
		{"limit", store.ListOptions{Limit: 2}, "a,b"},
		{"limit descending", store.ListOptions{Limit: 2, Desc: true}, "e,d"},
		{"after", store.ListOptions{After: "b"}, "c,d,e"},
		{"after with limit", store.ListOptions{After: "b", Limit: 2}, "c,d"},
		{"before", store.ListOptions{Before: "d"}, "a,b,c"},
		{"before with limit keeps the nearest", store.ListOptions{Before: "d", Limit: 2}, "b,c"},
		{"after and before", store.ListOptions{After: "a", Before: "e"}, "b,c,d"},
		{"after and before with limit", store.ListOptions{After: "a", Before: "e", Limit: 2}, "b,c"},
		{"descending after", store.ListOptions{Desc: true, After: "d"}, "c,b,a"},
		{"descending before with limit", store.ListOptions{Desc: true, Before: "b", Limit: 2}, "d,c"},
		{"after the last", store.ListOptions{After: "e"}, ""},
		{"unknown cursor", store.ListOptions{After: "nope"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"View", "Update"} {
				var got []store.Record
				read := func(r store.Reader) (err error) {
					got, err = r.List(ctx, "wallet", "o1", tc.opts)
					return err
				}
				var err error
				if mode == "View" {
					err = s.View(ctx, read)
				} else {
					err = s.Update(ctx, func(tx store.Tx) error { return read(tx) })
				}
				if err != nil {
					t.Fatalf("%s: List: %v", mode, err)
				}
				if ids(got) != tc.want {
					t.Fatalf("%s: List = %q, want %q", mode, ids(got), tc.want)
				}
			}
		})
	}
	counts := []struct {
		kind, org string
		atMost    int
		want      int
	}{{"wallet", "o1", 0, 5}, {"wallet", "o2", 0, 1}, {"user", "o1", 0, 1}, {"user", "o2", 0, 0},
		{"wallet", "o1", 3, 3}, {"wallet", "o1", 5, 5}, {"wallet", "o1", 100, 5}, {"wallet", "o2", 1, 1}}
	for _, c := range counts {
		var n int
		if err := s.View(ctx, func(r store.Reader) (err error) { n, err = r.Count(ctx, c.kind, c.org, c.atMost); return err }); err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Errorf("Count(%s, %s, atMost %d) = %d, want %d", c.kind, c.org, c.atMost, n, c.want)
		}
	}
}

func activity(id, org, fp, status, typ string, at time.Time) store.Activity {
	return store.Activity{ID: id, OrgID: org, Fingerprint: fp, Status: status, Type: typ, CreatedAt: at, UpdatedAt: at,
		Data: []byte(`{"id":"` + id + `"}`)}
}

const (
	completed = "ACTIVITY_STATUS_COMPLETED"
	pending   = "ACTIVITY_STATUS_PENDING"
	failed    = store.ActivityStatusFailed
)

func byFingerprint(t *testing.T, s store.Store, fp string) (string, error) {
	t.Helper()
	var a store.Activity
	err := s.View(context.Background(), func(r store.Reader) (err error) {
		a, err = r.GetActivityByFingerprint(context.Background(), fp)
		return err
	})
	return a.ID, err
}

func testActivityFingerprints(t *testing.T, s store.Store) {
	ctx := context.Background()
	put := func(a store.Activity) error {
		return s.Update(ctx, func(tx store.Tx) error { return tx.PutActivity(ctx, a) })
	}
	steps := []struct {
		name    string
		a       store.Activity
		wantErr error
		fp      string // after the step, the fingerprint "fp" belongs to this activity ("" none)
	}{
		{"failed activity", activity("a1", "o", "fp", failed, "T", base), nil, ""},
		{"second failed activity with the same bytes", activity("a2", "o", "fp", failed, "T", base), nil, ""},
		{"completed activity takes the fingerprint", activity("a3", "o", "fp", completed, "T", base), nil, "a3"},
		{
			"another completed one is refused",
			activity("a4", "o", "fp", pending, "T", base),
			store.ErrAlreadyExists,
			"a3",
		},
		{
			"a failed one cannot be revived while it is held",
			activity("a1", "o", "fp", completed, "T", base),
			store.ErrAlreadyExists,
			"a3",
		},
		{"updating the holder keeps it", activity("a3", "o", "fp", pending, "T2", base.Add(time.Second)), nil, "a3"},
		{"failing the holder frees it", activity("a3", "o", "fp", failed, "T2", base.Add(time.Second)), nil, ""},
		{"then another may take it", activity("a4", "o", "fp", pending, "T", base), nil, "a4"},
		{"empty fingerprints never collide", activity("a5", "o", "", completed, "T", base), nil, "a4"},
		{"empty fingerprints never collide again", activity("a6", "o", "", completed, "T", base), nil, "a4"},
	}
	for _, st := range steps {
		err := put(st.a)
		if !errors.Is(err, st.wantErr) || (st.wantErr == nil && err != nil) {
			t.Fatalf("%s: PutActivity = %v, want %v", st.name, err, st.wantErr)
		}
		id, err := byFingerprint(t, s, "fp")
		if st.fp == "" {
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s: GetActivityByFingerprint = %q, %v, want ErrNotFound", st.name, id, err)
			}
		} else if err != nil || id != st.fp {
			t.Fatalf("%s: GetActivityByFingerprint = %q, %v, want %q", st.name, id, err, st.fp)
		}
	}
	if _, err := byFingerprint(t, s, ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetActivityByFingerprint(\"\") = %v, want ErrNotFound", err)
	}
	var a store.Activity
	if err := s.View(ctx, func(r store.Reader) (err error) { a, err = r.GetActivity(ctx, "a3"); return err }); err != nil {
		t.Fatal(err)
	}
	want := activity("a3", "o", "fp", failed, "T2", base.Add(time.Second))
	if a.ID != want.ID || a.OrgID != want.OrgID || a.Fingerprint != want.Fingerprint || a.Status != want.Status ||
		a.Type != want.Type || !a.CreatedAt.Equal(want.CreatedAt) || !a.UpdatedAt.Equal(want.UpdatedAt) || !bytes.Equal(a.Data, want.Data) {
		t.Fatalf("GetActivity = %+v, want %+v", a, want)
	}
	err := s.View(ctx, func(r store.Reader) error { _, err := r.GetActivity(ctx, "nope"); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetActivity(nope) = %v, want ErrNotFound", err)
	}
}

func testListActivities(t *testing.T, s store.Store) {
	ctx := context.Background()
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	// Newest first: f, e, d (same time as c, larger id), c, b, a.
	acts := []store.Activity{
		activity("a", "o1", "fa", completed, "SIGN", ms(0)),
		activity("b", "o1", "fb", failed, "SIGN", ms(1)),
		activity("c", "o1", "fc", pending, "CREATE_USER", ms(2)),
		activity("d", "o1", "fd", completed, "CREATE_USER", ms(2)),
		activity("e", "o1", "fe", completed, "SIGN", ms(3)),
		activity("f", "o1", "ff", pending, "SIGN", ms(4)),
		activity("x", "o2", "fx", completed, "SIGN", ms(5)),
	}
	update(t, s, func(tx store.Tx) error {
		for _, a := range acts {
			if err := tx.PutActivity(ctx, a); err != nil {
				return err
			}
		}
		return nil
	})
	tests := []struct {
		name      string
		org       string
		f         store.ActivityFilter
		want      string
		wantCount int // CountActivities ignores paging
	}{
		{"all", "o1", store.ActivityFilter{}, "f,e,d,c,b,a", 6},
		{"one status", "o1", store.ActivityFilter{Statuses: []string{completed}}, "e,d,a", 3},
		{"two statuses", "o1", store.ActivityFilter{Statuses: []string{pending, failed}}, "f,c,b", 3},
		{"type", "o1", store.ActivityFilter{Types: []string{"CREATE_USER"}}, "d,c", 2},
		{
			"status and type",
			"o1",
			store.ActivityFilter{Statuses: []string{completed}, Types: []string{"SIGN", "X"}},
			"e,a",
			2,
		},
		{"since is inclusive", "o1", store.ActivityFilter{Since: ms(2)}, "f,e,d,c", 4},
		{"limit", "o1", store.ActivityFilter{Limit: 2}, "f,e", 6},
		{"after", "o1", store.ActivityFilter{After: "d", Limit: 2}, "c,b", 6},
		{"after within a shared timestamp", "o1", store.ActivityFilter{After: "d"}, "c,b,a", 6},
		{"before with limit keeps the nearest", "o1", store.ActivityFilter{Before: "c", Limit: 2}, "e,d", 6},
		{"before", "o1", store.ActivityFilter{Before: "c"}, "f,e,d", 6},
		{"after and before", "o1", store.ActivityFilter{After: "f", Before: "b"}, "e,d,c", 6},
		{"filter and paging", "o1", store.ActivityFilter{Statuses: []string{completed}, After: "e", Limit: 1}, "d", 3},
		{"other organization", "o2", store.ActivityFilter{}, "x", 1},
		{"no such organization", "o3", store.ActivityFilter{}, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []store.Activity
			var n int
			err := s.View(ctx, func(r store.Reader) (err error) {
				if got, err = r.ListActivities(ctx, tc.org, tc.f); err != nil {
					return err
				}
				n, err = r.CountActivities(ctx, tc.org, tc.f)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if activityIDs(got) != tc.want {
				t.Errorf("ListActivities = %q, want %q", activityIDs(got), tc.want)
			}
			if n != tc.wantCount {
				t.Errorf("CountActivities = %d, want %d", n, tc.wantCount)
			}
		})
	}
	var all, signs int
	err := s.View(ctx, func(r store.Reader) (err error) {
		if all, err = r.CountActivities(ctx, "", store.ActivityFilter{}); err != nil {
			return err
		}
		signs, err = r.CountActivities(ctx, "", store.ActivityFilter{Types: []string{"SIGN"}})
		return err
	})
	if err != nil || all != 7 || signs != 5 {
		t.Fatalf("CountActivities over all organizations = %d, %d, %v; want 7, 5", all, signs, err)
	}
}

var errBoom = errors.New("boom")

func testSavepoint(t *testing.T, s store.Store) {
	ctx := context.Background()
	put := func(tx store.Tx, id string) error { return tx.Put(ctx, rec("r", id, "o", base, id)) }
	update(t, s, func(tx store.Tx) error {
		if err := put(tx, "a"); err != nil {
			return err
		}
		err := tx.Savepoint(ctx, func(tx store.Tx) error {
			if err := put(tx, "b"); err != nil {
				return err
			}
			if err := tx.PutActivity(ctx, activity("act-b", "o", "fp-b", completed, "T", base)); err != nil {
				return err
			}
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			return fmt.Errorf("Savepoint returned %v, want fn's error", err)
		}
		// Inside this transaction b is gone again, a is not.
		if _, err := tx.Get(ctx, "r", "b"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("after rollback Get(b) = %v", err)
		}
		if _, err := tx.Get(ctx, "r", "a"); err != nil {
			return err
		}
		err = tx.Savepoint(ctx, func(tx store.Tx) error {
			if err := put(tx, "c"); err != nil {
				return err
			}
			inner := tx.Savepoint(ctx, func(tx store.Tx) error {
				if err := put(tx, "d"); err != nil {
					return err
				}
				return errBoom
			})
			if !errors.Is(inner, errBoom) {
				return fmt.Errorf("inner Savepoint returned %v", inner)
			}
			return tx.Savepoint(ctx, func(tx store.Tx) error { return put(tx, "e") })
		})
		if err != nil {
			return err
		}
		return put(tx, "f")
	})
	for _, id := range []string{"a", "c", "e", "f"} {
		mustGet(t, s, "r", id)
	}
	for _, id := range []string{"b", "d"} {
		mustNotFound(t, s, "r", id)
	}
	if _, err := byFingerprint(t, s, "fp-b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("rolled-back activity present: %v", err)
	}
}

func testFailedUpdate(t *testing.T, s store.Store) {
	ctx := context.Background()
	update(t, s, func(tx store.Tx) error { return tx.Put(ctx, rec("r", "keep", "o", base, "v1")) })
	err := s.Update(ctx, func(tx store.Tx) error {
		if err := tx.Put(ctx, rec("r", "new", "o", base, ""), store.Key{Name: "n", Value: "v", Unique: true}); err != nil {
			return err
		}
		if err := tx.Put(ctx, rec("r", "keep", "o", base, "v2")); err != nil {
			return err
		}
		if err := tx.Delete(ctx, "r", "keep"); err != nil {
			return err
		}
		if err := tx.PutActivity(ctx, activity("act", "o", "fp", completed, "T", base)); err != nil {
			return err
		}
		return fmt.Errorf("handler failed: %w", errBoom)
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update = %v, want fn's error", err)
	}
	mustNotFound(t, s, "r", "new")
	if got := mustGet(t, s, "r", "keep"); string(got.Data) != "v1" {
		t.Fatalf("kept record changed to %q", got.Data)
	}
	if got := lookup(t, s, "n", "v"); len(got) != 0 {
		t.Fatalf("key left behind: %v", got)
	}
	if _, err := byFingerprint(t, s, "fp"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("activity left behind: %v", err)
	}
}

// testTxContinuesAfterConflict: ErrAlreadyExists is an answer, not a broken transaction (the
// activity engine looks up the holder of a fingerprint after a conflicting PutActivity).
func testTxContinuesAfterConflict(t *testing.T, s store.Store) {
	ctx := context.Background()
	update(t, s, func(tx store.Tx) error {
		if err := tx.Insert(ctx, rec("r", "a", "o", base, ""), store.Key{Name: "k", Value: "v", Unique: true}); err != nil {
			return err
		}
		return tx.PutActivity(ctx, activity("act1", "o", "fp", completed, "T", base))
	})
	update(t, s, func(tx store.Tx) error {
		if err := tx.Insert(ctx, rec("r", "a", "o", base, "")); !errors.Is(err, store.ErrAlreadyExists) {
			return fmt.Errorf("Insert = %v", err)
		}
		if err := tx.Insert(ctx, rec("r", "b", "o", base, ""), store.Key{Name: "k", Value: "v", Unique: true}); !errors.Is(
			err,
			store.ErrAlreadyExists,
		) {
			return fmt.Errorf("Insert with taken key = %v", err)
		}
		if err := tx.PutActivity(ctx, activity("act2", "o", "fp", completed, "T", base)); !errors.Is(
			err,
			store.ErrAlreadyExists,
		) {
			return fmt.Errorf("PutActivity = %v", err)
		}
		holder, err := tx.GetActivityByFingerprint(ctx, "fp")
		if err != nil || holder.ID != "act1" {
			return fmt.Errorf("GetActivityByFingerprint = %q, %v", holder.ID, err)
		}
		return tx.Insert(ctx, rec("r", "c", "o", base, ""))
	})
	mustGet(t, s, "r", "c")
	mustNotFound(t, s, "r", "b")
}

func testReadOwnWrites(t *testing.T, s store.Store) {
	ctx := context.Background()
	update(t, s, func(tx store.Tx) error {
		if err := tx.Insert(ctx, rec("user", "u1", "o", base, "x"), store.Key{Name: "email", Value: "e"}); err != nil {
			return err
		}
		if err := tx.PutActivity(ctx, activity("a1", "o", "fp", pending, "T", base)); err != nil {
			return err
		}
		if r, err := tx.Get(ctx, "user", "u1"); err != nil || string(r.Data) != "x" {
			return fmt.Errorf("Get = %q, %v", r.Data, err)
		}
		if l, err := tx.List(ctx, "user", "o", store.ListOptions{}); err != nil || ids(l) != "u1" {
			return fmt.Errorf("List = %q, %v", ids(l), err)
		}
		if n, err := tx.Count(ctx, "user", "o", 0); err != nil || n != 1 {
			return fmt.Errorf("Count = %d, %v", n, err)
		}
		if refs, err := tx.Lookup(ctx, "email", "e"); err != nil || len(refs) != 1 || refs[0].ID != "u1" {
			return fmt.Errorf("Lookup = %v, %v", refs, err)
		}
		if a, err := tx.GetActivity(ctx, "a1"); err != nil || a.Status != pending {
			return fmt.Errorf("GetActivity = %v, %v", a.Status, err)
		}
		if a, err := tx.GetActivityByFingerprint(ctx, "fp"); err != nil || a.ID != "a1" {
			return fmt.Errorf("GetActivityByFingerprint = %v, %v", a.ID, err)
		}
		if l, err := tx.ListActivities(ctx, "o", store.ActivityFilter{}); err != nil || activityIDs(l) != "a1" {
			return fmt.Errorf("ListActivities = %q, %v", activityIDs(l), err)
		}
		if n, err := tx.CountActivities(ctx, "o", store.ActivityFilter{}); err != nil || n != 1 {
			return fmt.Errorf("CountActivities = %d, %v", n, err)
		}
		if err := tx.Delete(ctx, "user", "u1"); err != nil {
			return err
		}
		if _, err := tx.Get(ctx, "user", "u1"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("Get after Delete = %v", err)
		}
		return nil
	})
}

func testViewIsolation(t *testing.T, s store.Store) {
	ctx := context.Background()
	written := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Update(ctx, func(tx store.Tx) error {
			if err := tx.Put(ctx, rec("r", "x", "o", base, "")); err != nil {
				return err
			}
			if err := tx.PutActivity(ctx, activity("a", "o", "", pending, "T", base)); err != nil {
				return err
			}
			close(written)
			<-release
			return nil
		})
	}()
	select {
	case <-written:
	case err := <-done:
		t.Fatalf("Update ended early: %v", err)
	}
	mustNotFound(t, s, "r", "x")
	err := s.View(ctx, func(r store.Reader) error {
		if n, err := r.Count(ctx, "r", "o", 0); err != nil || n != 0 {
			return fmt.Errorf("Count = %d, %v", n, err)
		}
		if _, err := r.GetActivity(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("GetActivity = %v", err)
		}
		return nil
	})
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, "r", "x")
}

// testLimitedInserts: 30 concurrent transactions each count an organization's records of a
// kind and insert one more only while fewer than the limit exist (the per-organization limits
// of wallets, tags, keys...). The count inside Update must serialise with the other counters,
// so exactly the limit is reached, never more.
func testLimitedInserts(t *testing.T, s store.Store) {
	ctx := context.Background()
	const limit, start, tries = 100, 95, 30
	org := "limited-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	update(t, s, func(tx store.Tx) error {
		for i := 0; i < start; i++ {
			if err := tx.Insert(ctx, rec("limited", org+"-"+strconv.Itoa(i), org, base, "{}")); err != nil {
				return err
			}
		}
		return nil
	})
	errFull := errors.New("limit reached")
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, refused := 0, 0
	for g := 0; g < tries; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(ctx, func(tx store.Tx) error {
				n, err := tx.Count(ctx, "limited", org, limit)
				if err != nil {
					return err
				}
				if n >= limit {
					return errFull
				}
				return tx.Insert(ctx, rec("limited", org+"-new-"+strconv.Itoa(g), org, base, "{}"))
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case errors.Is(err, errFull):
				refused++
			default:
				t.Errorf("Update: %v", err)
			}
		}()
	}
	wg.Wait()
	var n int
	if err := s.View(ctx, func(r store.Reader) (err error) {
		n, err = r.Count(ctx, "limited", org, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != limit || created != limit-start || refused != tries-(limit-start) {
		t.Fatalf("%d records (%d created, %d refused); want exactly %d", n, created, refused, limit)
	}
}

func testConcurrentCounter(t *testing.T, s store.Store) {
	tests := []struct {
		name       string
		goroutines int
		each       int
	}{
		{"2 goroutines", 2, 50},
		{"8 goroutines", 8, 25},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			id := "counter-" + strconv.Itoa(tc.goroutines)
			update(t, s, func(tx store.Tx) error { return tx.Insert(ctx, rec("counter", id, "o", base, "0")) })
			var wg sync.WaitGroup
			errs := make(chan error, tc.goroutines)
			for g := 0; g < tc.goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < tc.each; i++ {
						err := s.Update(ctx, func(tx store.Tx) error {
							r, err := tx.Get(ctx, "counter", id)
							if err != nil {
								return err
							}
							n, err := strconv.Atoi(string(r.Data))
							if err != nil {
								return err
							}
							r.Data = []byte(strconv.Itoa(n + 1))
							return tx.Put(ctx, r)
						})
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("Update: %v", err)
			}
			got := string(mustGet(t, s, "counter", id).Data)
			if want := strconv.Itoa(tc.goroutines * tc.each); got != want {
				t.Fatalf("counter = %s, want %s (lost updates)", got, want)
			}
		})
	}
}

// race runs the writes concurrently, each in its own Update, and returns their errors.
func race(s store.Store, writes ...func(store.Tx) error) []error {
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, w := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = s.Update(context.Background(), w)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

func oneWins(t *testing.T, errs []error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("both won: %v", errs)
			}
			winner = i
		case !errors.Is(err, store.ErrAlreadyExists):
			t.Fatalf("loser got %v, want ErrAlreadyExists", err)
		}
	}
	if winner < 0 {
		t.Fatalf("nobody won: %v", errs)
	}
	return winner
}

func testInsertRace(t *testing.T, s store.Store) {
	ctx := context.Background()
	for round := 0; round < 20; round++ {
		id := "r" + strconv.Itoa(round)
		w := func(data string) func(store.Tx) error {
			return func(tx store.Tx) error {
				return tx.Insert(ctx, rec("race", id, "o", base, data), store.Key{Name: "by", Value: data})
			}
		}
		winner := oneWins(t, race(s, w("0"), w("1")))
		got := mustGet(t, s, "race", id)
		if string(got.Data) != strconv.Itoa(winner) {
			t.Fatalf("round %d: stored %q, winner %d", round, got.Data, winner)
		}
		if refs := lookup(t, s, "by", strconv.Itoa(1-winner)); strings.Contains(strings.Join(refs, " "), "/"+id+"@") {
			t.Fatalf("round %d: loser's key stored: %v", round, refs)
		}
	}
}

func testUniqueKeyRace(t *testing.T, s store.Store) {
	ctx := context.Background()
	for round := 0; round < 20; round++ {
		key := store.Key{Name: "email", Value: "e" + strconv.Itoa(round), Unique: true}
		w := func(id string) func(store.Tx) error {
			return func(tx store.Tx) error { return tx.Insert(ctx, rec("user", id, "o", base, ""), key) }
		}
		a, b := "a"+strconv.Itoa(round), "b"+strconv.Itoa(round)
		winner := []string{a, b}[oneWins(t, race(s, w(a), w(b)))]
		loser := map[string]string{a: b, b: a}[winner]
		mustNotFound(t, s, "user", loser)
		if got := strings.Join(lookup(t, s, key.Name, key.Value), " "); got != "user/"+winner+"@o" {
			t.Fatalf("round %d: key owners %q, want %s", round, got, winner)
		}
		// Two activities with one fingerprint: one wins.
		fp := "fp" + strconv.Itoa(round)
		oneWins(t, race(s,
			func(tx store.Tx) error { return tx.PutActivity(ctx, activity(a, "o", fp, pending, "T", base)) },
			func(tx store.Tx) error { return tx.PutActivity(ctx, activity(b, "o", fp, pending, "T", base)) }))
	}
}

// testMixedOutcomes runs many small Updates at once (so that drivers that group commits put
// several in one transaction) where some fail in different ways: each outcome must stay its
// own.
func testMixedOutcomes(t *testing.T, s store.Store) {
	ctx := context.Background()
	update(t, s, func(tx store.Tx) error {
		return tx.Insert(ctx, rec("m", "taken", "o", base, ""), store.Key{Name: "k", Value: "taken", Unique: true})
	})
	const n = 96
	writes := make([]func(store.Tx) error, n)
	want := make([]error, n)
	for i := range writes {
		id := "m" + strconv.Itoa(i)
		r := rec("m", id, "o", base, id)
		switch i % 4 {
		case 0, 1: // succeeds
			writes[i] = func(tx store.Tx) error {
				if err := tx.Insert(ctx, r, store.Key{Name: "k", Value: id, Unique: true}); err != nil {
					return err
				}
				return tx.PutActivity(ctx, activity("act-"+id, "o", "fp-"+id, completed, "T", base))
			}
		case 2: // fn fails after writing
			want[i] = errBoom
			writes[i] = func(tx store.Tx) error {
				if err := tx.Insert(ctx, r); err != nil {
					return err
				}
				return errBoom
			}
		case 3: // a store error: the unique key is taken
			want[i] = store.ErrAlreadyExists
			writes[i] = func(tx store.Tx) error {
				if err := tx.Insert(ctx, r); err != nil {
					return err
				}
				return tx.Put(ctx, r, store.Key{Name: "k", Value: "taken", Unique: true})
			}
		}
	}
	errs := race(s, writes...)
	for i, err := range errs {
		id := "m" + strconv.Itoa(i)
		if want[i] == nil {
			if err != nil {
				t.Fatalf("%s: Update = %v, want nil", id, err)
			}
			mustGet(t, s, "m", id)
			if got, err := byFingerprint(t, s, "fp-"+id); err != nil || got != "act-"+id {
				t.Fatalf("%s: activity %q, %v", id, got, err)
			}
			continue
		}
		if !errors.Is(err, want[i]) {
			t.Fatalf("%s: Update = %v, want %v", id, err, want[i])
		}
		mustNotFound(t, s, "m", id)
	}
	var count int
	if err := s.View(ctx, func(r store.Reader) (err error) { count, err = r.Count(ctx, "m", "o", 0); return err }); err != nil {
		t.Fatal(err)
	}
	if count != n/2+1 {
		t.Fatalf("Count = %d, want %d", count, n/2+1)
	}
}

func testPanic(t *testing.T, s store.Store) {
	ctx := context.Background()
	func() {
		defer func() {
			if r := recover(); r != "handler bug" {
				t.Fatalf("recovered %v, want the fn's panic", r)
			}
		}()
		s.Update(ctx, func(tx store.Tx) error {
			if err := tx.Put(ctx, rec("r", "p", "o", base, "")); err != nil {
				return err
			}
			panic("handler bug")
		})
		t.Fatal("Update returned after fn panicked")
	}()
	mustNotFound(t, s, "r", "p")
	// The store still works.
	update(t, s, func(tx store.Tx) error { return tx.Put(ctx, rec("r", "q", "o", base, "")) })
	mustGet(t, s, "r", "q")
}

func testCancelledContext(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := s.Update(ctx, func(tx store.Tx) error {
		ran = true
		return tx.Put(ctx, rec("r", "c", "o", base, ""))
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Update with a cancelled context = %v (fn ran: %v)", err, ran)
	}
	mustNotFound(t, s, "r", "c")

	// Cancelled while fn runs: the writes fail and nothing is kept.
	ctx, cancel = context.WithCancel(context.Background())
	err = s.Update(ctx, func(tx store.Tx) error {
		if err := tx.Put(ctx, rec("r", "d", "o", base, "")); err != nil {
			return err
		}
		cancel()
		return tx.Put(ctx, rec("r", "e", "o", base, ""))
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Update cancelled midway = %v", err)
	}
	mustNotFound(t, s, "r", "d")
	mustNotFound(t, s, "r", "e")
}

func testErrorsDoNotLeakData(t *testing.T, s store.Store) {
	ctx := context.Background()
	secret := "SECRET-d41d8cd98f00b204e9800998ecf8427e"
	update(t, s, func(tx store.Tx) error {
		if err := tx.Insert(ctx, rec("k", "1", "o", base, secret), store.Key{Name: "u", Value: "v", Unique: true}); err != nil {
			return err
		}
		return tx.PutActivity(
			ctx,
			store.Activity{ID: "a", OrgID: "o", Fingerprint: "fp", Status: pending, Type: "T", Data: []byte(secret)},
		)
	})
	errs := []error{
		s.Update(ctx, func(tx store.Tx) error { return tx.Insert(ctx, rec("k", "1", "o", base, secret)) }),
		s.Update(ctx, func(tx store.Tx) error {
			return tx.Insert(ctx, rec("k", "2", "o", base, secret), store.Key{Name: "u", Value: "v", Unique: true})
		}),
		s.Update(ctx, func(tx store.Tx) error {
			return tx.PutActivity(
				ctx,
				store.Activity{
					ID:          "b",
					OrgID:       "o",
					Fingerprint: "fp",
					Status:      pending,
					Type:        "T",
					Data:        []byte(secret),
				},
			)
		}),
	}
	for i, err := range errs {
		if err == nil {
			t.Fatalf("write %d succeeded", i)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error %d carries record data: %v", i, err)
		}
	}
}

func testClosed(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Update(ctx, func(store.Tx) error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Update after Close = %v, want ErrClosed", err)
	}
	if err := s.View(ctx, func(store.Reader) error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("View after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
}

// testCountKind: both stores count a kind over every organization (the dashboard's totals).
func testCountKind(t *testing.T, s store.Store) {
	ck, ok := s.(interface {
		CountKind(ctx context.Context, kind string) (int, error)
	})
	if !ok {
		t.Fatalf("%s store has no CountKind", s.Dialect())
	}
	ctx := context.Background()
	err := s.Update(ctx, func(tx store.Tx) error {
		for i, org := range []string{"a", "b", "b", ""} {
			if err := tx.Put(ctx, rec("user", fmt.Sprintf("u%d", i), org, base, "{}")); err != nil {
				return err
			}
		}
		return tx.Put(ctx, rec("wallet", "w", "a", base, "{}"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := ck.CountKind(ctx, "user"); err != nil || n != 4 {
		t.Fatalf("CountKind(user) = %d, %v; want 4", n, err)
	}
	if n, err := ck.CountKind(ctx, "nothing"); err != nil || n != 0 {
		t.Fatalf("CountKind(nothing) = %d, %v", n, err)
	}
}

// NoLock reads inside a transaction see its own writes and do not wait for another
// transaction that holds the row (Get inside Update, which locks on PostgreSQL).
func testNoLock(t *testing.T, s store.Store) {
	ctx := context.Background()
	org := "nolock-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	update(t, s, func(tx store.Tx) error { return tx.Insert(ctx, rec("shared", org, org, base, `{"v":1}`)) })
	// Inside one transaction: its own write is visible through NoLock.
	update(t, s, func(tx store.Tx) error {
		if err := tx.Put(ctx, rec("shared", org+"-own", org, base, `{"v":2}`)); err != nil {
			return err
		}
		r, err := tx.NoLock().Get(ctx, "shared", org+"-own")
		if err != nil || string(r.Data) != `{"v":2}` {
			t.Errorf("NoLock does not see the transaction's own write: %v %s", err, r.Data)
		}
		if _, err := tx.NoLock().Get(ctx, "shared", "absent"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("NoLock Get of an absent record: %v", err)
		}
		return nil
	})
	// One transaction holds the row (Get) while others read it through NoLock: they finish
	// while it is still open. (SQLite runs one transaction at a time, so there the readers
	// simply run after it; the check is that nothing deadlocks and every read succeeds.)
	held := make(chan struct{})
	release := make(chan struct{})
	holderDone := make(chan error, 1)
	go func() {
		holderDone <- s.Update(ctx, func(tx store.Tx) error {
			if _, err := tx.Get(ctx, "shared", org); err != nil {
				return err
			}
			close(held)
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
			return nil
		})
	}()
	<-held
	const readers = 4
	readDone := make(chan error, readers)
	for range readers {
		go func() {
			readDone <- s.Update(ctx, func(tx store.Tx) error {
				r, err := tx.NoLock().Get(ctx, "shared", org)
				if err == nil && string(r.Data) != `{"v":1}` {
					err = fmt.Errorf("read %s", r.Data)
				}
				return err
			})
		}()
	}
	finishedWhileHeld := 0
	timeout := time.After(2 * time.Second)
wait:
	for finishedWhileHeld < readers {
		select {
		case err := <-readDone:
			if err != nil {
				t.Fatalf("NoLock read: %v", err)
			}
			finishedWhileHeld++
		case <-timeout:
			break wait
		}
	}
	close(release)
	if err := <-holderDone; err != nil {
		t.Fatal(err)
	}
	for i := finishedWhileHeld; i < readers; i++ {
		if err := <-readDone; err != nil {
			t.Fatalf("NoLock read: %v", err)
		}
	}
	if s.Dialect() == "postgres" && finishedWhileHeld != readers {
		t.Fatalf(
			"only %d of %d NoLock reads finished while another transaction held the row: they queued behind its lock",
			finishedWhileHeld,
			readers,
		)
	}
}

// Key values are any string: a NUL inside one (an OAuth identity joins its parts with NUL),
// non-ASCII text, a value that looks like a driver's own encoding. Each is stored, found by
// Lookup, held unique, and exported as it was put.
func testKeyValuesHoldAnyString(t *testing.T, s store.Store) {
	ctx := context.Background()
	values := []string{
		"https://issuer.example\x00subject\x00aud",
		"\x00",
		"\x01b64:AA==",
		"\x01b64:",
		"ünïcødé ✓",
		"plain",
	}
	update(t, s, func(tx store.Tx) error {
		for i, v := range values {
			id := fmt.Sprintf("k%d", i)
			if err := tx.Insert(ctx, rec("ident", id, "o1", base, ""), store.Key{Name: "ident.subject", Value: v, Unique: true},
				store.Key{Name: "ident.tag", Value: v}); err != nil {
				return fmt.Errorf("insert %q: %w", v, err)
			}
		}
		return nil
	})
	for i, v := range values {
		if got := strings.Join(lookup(t, s, "ident.subject", v), " "); got != fmt.Sprintf("ident/k%d@o1", i) {
			t.Fatalf("Lookup(%q) = %q", v, got)
		}
	}
	err := s.Update(ctx, func(tx store.Tx) error {
		return tx.Insert(
			ctx,
			rec("ident", "dup", "o1", base, ""),
			store.Key{Name: "ident.subject", Value: values[0], Unique: true},
		)
	})
	if !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("a taken unique key holding NUL: %v", err)
	}
	ex, ok := s.(store.Exporter)
	if !ok {
		return
	}
	seen := map[string]bool{}
	if err := ex.EachRecord(ctx, "ident", func(r store.Record, keys []store.Key) error {
		for _, k := range keys {
			seen[k.Name+"="+k.Value] = true
		}
		if len(keys) != 2 || keys[0].Name != "ident.subject" || keys[0].Value != keys[1].Value {
			return fmt.Errorf("exported keys of %s: %+v", r.ID, keys)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if !seen["ident.subject="+v] {
			t.Fatalf("export lost the key value %q", v)
		}
	}
}
