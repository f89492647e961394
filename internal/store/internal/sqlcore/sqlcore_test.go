package sqlcore

import (
	"fmt"
	"testing"
	"testing/fstest"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

func TestNanosRoundTrip(t *testing.T) {
	for _, tm := range []time.Time{
		{},
		time.Unix(0, 0),
		time.Unix(0, 1).In(time.FixedZone("Y", -3600)),
		time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2261, 12, 31, 23, 59, 59, 999999999, time.UTC),
	} {
		n, err := Nanos(tm)
		if err != nil {
			t.Fatalf("Nanos(%v): %v", tm, err)
		}
		if got := Time(n); !got.Equal(tm) || (!tm.IsZero() && got.Location() != time.UTC) {
			t.Fatalf("Time(Nanos(%v)) = %v", tm, got)
		}
	}
	for _, tm := range []time.Time{time.Date(1677, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if _, err := Nanos(tm); err == nil {
			t.Fatalf("Nanos(%v) accepted", tm)
		}
	}
}

func TestNormalizeKeys(t *testing.T) {
	k := func(n, v string, u bool) store.Key { return store.Key{Name: n, Value: v, Unique: u} }
	tests := []struct {
		in         []store.Key
		want       string
		wantUnique bool
	}{
		{nil, "[]", false},
		{[]store.Key{k("a", "1", false)}, "[{a 1 false}]", false},
		{[]store.Key{k("a", "1", false), k("a", "1", true), k("b", "2", false)}, "[{a 1 true} {b 2 false}]", true},
		{[]store.Key{k("a", "1", true), k("a", "2", false)}, "[{a 1 true} {a 2 false}]", true},
	}
	for _, tc := range tests {
		got, u := NormalizeKeys(tc.in)
		if fmt.Sprint(got) != tc.want || u != tc.wantUnique {
			t.Errorf("NormalizeKeys(%v) = %v, %v; want %s, %v", tc.in, got, u, tc.want, tc.wantUnique)
		}
	}
}

func TestMigrations(t *testing.T) {
	ms, err := Migrations(fstest.MapFS{
		"0002_b.sql": {Data: []byte("B")},
		"0001_a.sql": {Data: []byte("A")},
		"README":     {Data: []byte("x")},
	})
	if err != nil || len(ms) != 2 || ms[0].Version != 1 || ms[1].SQL != "B" {
		t.Fatalf("Migrations = %+v, %v", ms, err)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"bad name":  {"init.sql": {}},
		"duplicate": {"0001_a.sql": {}, "1_b.sql": {}},
		"zero":      {"0000_a.sql": {}},
	} {
		if _, err := Migrations(fsys); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestFit(t *testing.T) {
	for _, tc := range []struct {
		sizes    []int
		maxBytes int
		want     int
	}{
		{nil, 10, 0},
		{[]int{5, 5, 5}, 0, 3},
		{[]int{5, 5, 5}, 10, 2},
		{[]int{5, 5, 5}, 9, 1},
		{[]int{50, 1}, 10, 1}, // the first always
		{[]int{1, 50, 1}, 10, 1},
		{[]int{3, 3, 3}, 100, 3},
	} {
		if got := Fit(tc.sizes, tc.maxBytes); got != tc.want {
			t.Errorf("Fit(%v, %d) = %d, want %d", tc.sizes, tc.maxBytes, got, tc.want)
		}
	}
}

func TestDistinct(t *testing.T) {
	if got := fmt.Sprint(Distinct([]string{"b", "a", "b", "c", "a"})); got != "[b a c]" {
		t.Errorf("Distinct = %s", got)
	}
	many := make([]string, 3*store.MaxFilterValues)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	if got := len(Distinct(many)); got != store.MaxFilterValues+1 {
		t.Errorf("Distinct of %d values stopped at %d, want %d", len(many), got, store.MaxFilterValues+1)
	}
}

func TestIDSlots(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 4, 4: 4, 5: 8, 51: 64, 100: 128, MaxIDsPerRead: MaxIDsPerRead} {
		if got := IDSlots(n); got != want {
			t.Errorf("IDSlots(%d) = %d, want %d", n, got, want)
		}
	}
	if q := ActivitiesByID(Dollar, 2); q != "SELECT "+ActivityColumns+" FROM activities WHERE id IN ($1, $2)" {
		t.Errorf("ActivitiesByID = %s", q)
	}
	if q := RecordsByID(Question, 2); q != "SELECT "+RecordColumns+" FROM records WHERE kind = ? AND id IN (?, ?)" {
		t.Errorf("RecordsByID = %s", q)
	}
}
