package id

import (
	"strings"
	"testing"
	"time"
)

func TestNewIsValidAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		s := New()
		if !Valid(s) {
			t.Fatalf("New() = %q is not a valid UUID", s)
		}
		if s[14] != '4' {
			t.Fatalf("New() = %q is not version 4", s)
		}
		if seen[s] {
			t.Fatalf("duplicate %q", s)
		}
		seen[s] = true
	}
}

func TestNewOrderedSortsByTime(t *testing.T) {
	t0 := time.UnixMilli(1_764_000_000_000)
	seen := map[string]bool{}
	prev := ""
	for i := 0; i < 1000; i++ {
		s := NewOrdered(t0.Add(time.Duration(i) * time.Millisecond))
		if !Valid(s) {
			t.Fatalf("NewOrdered() = %q is not a valid UUID", s)
		}
		if s[14] != '7' || !strings.ContainsRune("89ab", rune(s[19])) {
			t.Fatalf("NewOrdered() = %q is not version 7, variant 10", s)
		}
		if seen[s] {
			t.Fatalf("duplicate %q", s)
		}
		seen[s] = true
		if s <= prev {
			t.Fatalf("%q made after %q sorts before it", s, prev)
		}
		prev = s
	}
	// The first 48 bits are the time in milliseconds (RFC 9562's example: 2022-02-22 19:22:22 UTC).
	got := NewOrdered(time.UnixMilli(0x017F22E279B0))
	if !strings.HasPrefix(got, "017f22e2-79b0-7") {
		t.Fatalf("NewOrdered(0x017F22E279B0 ms) = %q, want the prefix 017f22e2-79b0-7", got)
	}
}

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"11111111-2222-3333-4444-555555555555", true},
		{"11111111-2222-3333-4444-55555555555", false},
		{"11111111x2222-3333-4444-555555555555", false},
		{"11111111-2222-3333-4444-55555555555G", false},
		{"ABCDEF01-2222-3333-4444-555555555555", false},
		{"", false},
	} {
		if got := Valid(tc.in); got != tc.want {
			t.Errorf("Valid(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
