package gasstation

import (
	"math/big"
	"strings"
	"testing"
)

// ParseUSD reads limits from requests: it never panics, accepts only what FormatUSD writes back
// to the same amount (up to trailing zeros), and stays within the bound.
func FuzzParseUSD(f *testing.F) {
	for _, s := range []string{"0", "25", "0.5", "12.345678", "1000000000", "1000000000.000001", "-1", "1e3", "", ".",
		"1.", "00012.50", strings.Repeat("9", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseUSD(s)
		if err != nil {
			if v != 0 {
				t.Fatalf("ParseUSD(%q) = %d with an error", s, v)
			}
			return
		}
		if v < 0 || v > maxLimitMicros {
			t.Fatalf("ParseUSD(%q) = %d, out of bounds", s, v)
		}
		want, ok := new(big.Rat).SetString(s)
		if !ok || Micros(want) != v {
			t.Fatalf("ParseUSD(%q) = %d, not the decimal's value", s, v)
		}
		back, err := ParseUSD(FormatUSD(v))
		if err != nil || back != v {
			t.Fatalf("FormatUSD(%d) = %q reads back as %d, %v", v, FormatUSD(v), back, err)
		}
	})
}
