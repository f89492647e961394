package policy

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestStrIndexMatchesRunes: indexing and slicing through strIndex give what converting the
// string to []rune gives (the language's definition), for ASCII, non-ASCII and invalid UTF-8,
// short strings and long ones (past EvalBytesPerStep and several runeMarks).
func TestStrIndexMatchesRunes(t *testing.T) {
	long := strings.Repeat("aβ€😀", 100)
	for _, s := range []string{
		"", "a", "abc", "αβγδ", "\xff", "a\xffβ\xfe", strings.Repeat("x", 200), long,
		long + "\xff" + long, strings.Repeat("\xc3", 150), "😀" + strings.Repeat("b", 300),
	} {
		runes := []rune(s)
		x := newStrIndex(s)
		if x.runes != len(runes) || x.runes != utf8.RuneCountInString(s) {
			t.Fatalf("%q: %d characters, want %d", s, x.runes, len(runes))
		}
		if x.ascii != (len(runes) == len(s) && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
			return r >= utf8.RuneSelf
		})) {
			t.Fatalf("%q: ascii = %v", s, x.ascii)
		}
		for lo := 0; lo <= len(runes); lo += 1 + lo/7 {
			for hi := lo; hi <= len(runes); hi += 1 + hi/5 {
				if got, want := x.slice(lo, hi), string(runes[lo:hi]); got != want {
					t.Fatalf("%q[%d..%d] = %q, want %q", s, lo, hi, got, want)
				}
			}
		}
	}
}

// TestEvalIndexesLongStrings: the language's answers over long strings, through the cache.
func TestEvalIndexesLongStrings(t *testing.T) {
	long := strings.Repeat("αβγδ", 100) + "ω"
	data := "0x" + strings.Repeat("ab", 100)
	env := ValueEnv{"s": String(long), "d": String(data), "bad": String(strings.Repeat("a", 100) + "\xffz")}
	for _, src := range []string{
		"s[0] == 'α' && s[400] == 'ω' && s[399] == 'δ' && s[1..3] == 'βγ' && s[396..401] == 'αβγδω'",
		"[0, 4, 8].all(i, s[i] == 'α') && [1, 5].all(i, s[i..i] == '')",
		"d[0..10] == '0xabababab' && d[201] == 'b' && d[0..2] == '0x'",
		"[0, 1, 2].all(i, d[i] == d[i..201][0] && s[i] == s[i..401][0])",
		"bad[100] == '\uFFFD' && bad[100..102] == '\uFFFDz' && bad[99] == 'a'",
	} {
		e, err := Compile(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if ok, err := e.Eval(env); !ok || err != nil {
			t.Errorf("%s = %v, %v", src, ok, err)
		}
	}
	e, _ := Compile("s[401] == 'x'")
	if _, err := e.Eval(env); err == nil || !strings.Contains(err.Error(), "out of range [0, 401)") {
		t.Errorf("s[401]: %v", err)
	}
}
