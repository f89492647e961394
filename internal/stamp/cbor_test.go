package stamp

import (
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/stamp/stamptest"
)

// Cases from RFC 8949 Appendix A, plus WebAuthn-shaped ones.
func TestCBORDecode(t *testing.T) {
	for _, tc := range []struct {
		hex  string
		want any
	}{
		{"00", cborInt{v: 0}},
		{"17", cborInt{v: 23}},
		{"1818", cborInt{v: 24}},
		{"1903e8", cborInt{v: 1000}},
		{"1bffffffffffffffff", cborInt{v: 1<<64 - 1}},
		{"20", cborInt{neg: true, v: 0}},
		{"3903e7", cborInt{neg: true, v: 999}},
		{"3bffffffffffffffff", cborInt{neg: true, v: 1<<64 - 1}},
		{"f4", false},
		{"f5", true},
		{"f6", nil},
		{"f7", cborUndefined{}},
		{"f0", cborSimple(16)},
		{"f8ff", cborSimple(255)},
		{"f93c00", cborFloat(0x3c00)},
		{"fb3ff199999999999a", cborFloat(0x3ff199999999999a)},
		{"40", []byte{}},
		{"4401020304", []byte{1, 2, 3, 4}},
		{"60", ""},
		{"6449455446", "IETF"},
		{"62c3bc", "ü"},
		{"83010203", []any{cborInt{v: 1}, cborInt{v: 2}, cborInt{v: 3}}},
		{"8301820203820405", []any{cborInt{v: 1}, []any{cborInt{v: 2}, cborInt{v: 3}}, []any{cborInt{v: 4}, cborInt{v: 5}}}},
		{"a0", cborMap{}},
		{"a201020304", cborMap{{cborInt{v: 1}, cborInt{v: 2}}, {cborInt{v: 3}, cborInt{v: 4}}}},
		{"a26161016162820203", cborMap{{"a", cborInt{v: 1}}, {"b", []any{cborInt{v: 2}, cborInt{v: 3}}}}},
		{"5f42010243030405ff", []byte{1, 2, 3, 4, 5}},
		{"7f657374726561646d696e67ff", "streaming"},
		{"9fff", []any{}},
		{"9f018202039f0405ffff", []any{cborInt{v: 1}, []any{cborInt{v: 2}, cborInt{v: 3}}, []any{cborInt{v: 4}, cborInt{v: 5}}}},
		{"bf61610161629f0203ffff", cborMap{{"a", cborInt{v: 1}}, {"b", []any{cborInt{v: 2}, cborInt{v: 3}}}}},
		{"a1200a", cborMap{{cborInt{neg: true, v: 0}, cborInt{v: 10}}}},
	} {
		got, err := cborDecode(mustHex(t, tc.hex))
		if err != nil {
			t.Errorf("%s: %v", tc.hex, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %#v, want %#v", tc.hex, got, tc.want)
		}
	}
}

func TestCBORRejects(t *testing.T) {
	deep := strings.Repeat("81", MaxCBORDepth+1) + "00"
	manyPairs := "b90101" + strings.Repeat("0000", 257)
	for _, tc := range []struct{ name, hex, msg string }{
		{"empty", "", "end of data"},
		{"truncated int", "19 03"[:2], "end of data"},
		{"truncated string", "4401", "longer than the data"},
		{"huge string length", "5bffffffffffffffff", "longer than the data"},
		{"huge array length", "9bffffffffffffffff", "longer than the data"},
		{"huge map length", "bbffffffffffffffff", "more than"},
		{"reserved info", "1c", "reserved"},
		{"indefinite int", "1f", "indefinite"},
		{"tag", "c074323031332d30332d32315432303a30343a30305a", "tags"},
		{"lone break", "ff", "break"},
		{"missing break", "9f01", "missing break"},
		{"bad chunk", "5f6161ff", "chunk"},
		{"nested indefinite chunk", "5f5fffff", "chunk"},
		{"invalid UTF-8", "62c328", "UTF-8"},
		{"duplicate key", "a201020103", "duplicate"},
		{"array key", "a1800102", "key"},
		{"non-canonical simple", "f818", "simple"},
		{"trailing", "0000", "trailing"},
		{"too deep", deep, "nesting"},
		{"too many pairs", manyPairs, "more than"},
		// The item budget: an array declaring more elements than it leaves is refused at its
		// head, before anything is allocated for it; so is a map declaring too many pairs.
		{"array over the item budget", "9a00000401" + strings.Repeat("00", MaxCBORItems+1),
			fmt.Sprintf("more than %d items", MaxCBORItems)},
		{"map over the item budget", "9a00000259" + strings.Repeat("00", 600) + hex.EncodeToString(intKeyMap(255)),
			fmt.Sprintf("more than %d items", MaxCBORItems)},
		{"items over the budget", "9f" + strings.Repeat("00", MaxCBORItems) + "ff",
			fmt.Sprintf("more than %d items", MaxCBORItems)},
		{"nested items over the budget", "82" + "9f" + strings.Repeat("00", MaxCBORItems/2) + "ff" +
			"9f" + strings.Repeat("00", MaxCBORItems/2) + "ff", fmt.Sprintf("more than %d items", MaxCBORItems)},
	} {
		b, _ := hex.DecodeString(strings.ReplaceAll(tc.hex, " ", ""))
		_, err := cborDecode(b)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want mention of %q", tc.name, err, tc.msg)
		}
	}
}

// intKeyMap is a map of n pairs {0: 0, 1: 0, …}.
func intKeyMap(n int) []byte {
	b := cborHead(5, uint64(n))
	for i := range n {
		b = append(append(b, cborHead(0, uint64(i))...), 0x00)
	}
	return b
}

// A document of exactly MaxCBORItems items decodes: the budget refuses only what is over it.
func TestCBORItemBudgetAccepts(t *testing.T) {
	for _, h := range []string{
		"99" + fmt.Sprintf("%04x", MaxCBORItems-1) + strings.Repeat("00", MaxCBORItems-1),
		"9f" + strings.Repeat("00", MaxCBORItems-1) + "ff",
		hex.EncodeToString(intKeyMap(255)), // 1 + 510 items
		"9a00000201" + strings.Repeat("00", 512) + hex.EncodeToString(intKeyMap(255)),
	} {
		b, _ := hex.DecodeString(h)
		if _, err := cborDecode(b); err != nil {
			t.Errorf("%.20s…: %v", h, err)
		}
	}
}

// The independent encoder in stamptest and this decoder agree.
func TestCBORAgainstEncoder(t *testing.T) {
	v := stamptest.Map{
		{K: "fmt", V: "packed"},
		{K: -3, V: []byte{1, 2}},
		{K: "x", V: []any{int64(-1 << 40), uint64(1 << 63), true, false, nil, "é"}},
	}
	got, err := cborDecode(stamptest.EncodeCBOR(v))
	if err != nil {
		t.Fatal(err)
	}
	want := cborMap{
		{"fmt", "packed"},
		{cborInt{neg: true, v: 2}, []byte{1, 2}},
		{"x", []any{cborInt{neg: true, v: 1<<40 - 1}, cborInt{v: 1 << 63}, true, false, nil, "é"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v", got)
	}
}
