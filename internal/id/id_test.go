package id

import "testing"

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
