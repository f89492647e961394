package hd

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	const h = HardenedOffset
	tests := []struct {
		in   string
		want Path
	}{
		{"m", Path{}},
		{"m/0", Path{0}},
		{"m/44'/60'/0'/0/0", Path{44 + h, 60 + h, h, 0, 0}},
		{"m/44h/60H/0'/0/1", Path{44 + h, 60 + h, h, 0, 1}},
		{"m/8797555'/0'/0'", Path{8797555 + h, h, h}},
		{"m/2147483647'/2147483647", Path{0xffffffff, 0x7fffffff}},
		{"m/007", Path{7}},
	}
	for _, tt := range tests {
		got, err := ParsePath(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParsePath(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParsePathErrors(t *testing.T) {
	deep := "m" + strings.Repeat("/0", MaxPathDepth+1)
	for _, in := range []string{
		"", "M/0", "/0", "0/1", "m/", "m//0", "m/0/", "m/'", "m/-1", "m/+1", "m/ 1", "m/1 ",
		"m/0x10", "m/1''", "m/1'h", "m/2147483648", "m/2147483648'", "m/99999999999999999999",
		"m/1.5", "m/١", deep, "m/44'/60'/0'/0/0\x00",
	} {
		_, err := ParsePath(in)
		if !errors.Is(err, ErrInvalidPath) || !strings.HasPrefix(err.Error(), "invalid path: ") {
			t.Errorf("ParsePath(%q) error = %v, want an \"invalid path: ...\" error", in, err)
		}
	}
	if _, err := ParsePath("m" + strings.Repeat("/0", MaxPathDepth)); err != nil {
		t.Errorf("path of MaxPathDepth rejected: %v", err)
	}
}

func TestPathString(t *testing.T) {
	p, _ := ParsePath("m/44h/60H/0'/0/0")
	if got := p.String(); got != "m/44'/60'/0'/0/0" {
		t.Fatalf("String() = %q", got)
	}
	if got := (Path{}).String(); got != "m" {
		t.Fatalf("empty String() = %q", got)
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"m", "m/44'/60'/0'/0/0", "m/1h/2H", "m//", "m/2147483648", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("error %v does not wrap ErrInvalidPath", err)
			}
			return
		}
		if len(p) > MaxPathDepth {
			t.Fatalf("depth %d accepted", len(p))
		}
		again, err := ParsePath(p.String())
		if err != nil || !slices.Equal(p, again) {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
	})
}
