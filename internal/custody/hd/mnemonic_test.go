package hd

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// trezorVectors reads testdata/bip39-vectors.json: [entropy, mnemonic, seed, xprv] rows, all
// with the passphrase "TREZOR".
func trezorVectors(t testing.TB) [][4]string {
	t.Helper()
	raw, err := os.ReadFile("testdata/bip39-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string][][4]string
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v["english"]) < 24 {
		t.Fatalf("only %d vectors", len(v["english"]))
	}
	return v["english"]
}

func TestBIP39TrezorVectors(t *testing.T) {
	for _, v := range trezorVectors(t) {
		entropy, _ := hex.DecodeString(v[0])
		got, err := EntropyToMnemonic(entropy, LanguageEnglish)
		if err != nil || got != v[1] {
			t.Fatalf("EntropyToMnemonic(%s) = %q, %v; want %q", v[0], got, err, v[1])
		}
		ent, lang, err := ParseMnemonic(v[1])
		if err != nil || lang != LanguageEnglish || !bytes.Equal(ent, entropy) {
			t.Fatalf("ParseMnemonic(%q) = %x, %s, %v", v[1], ent, lang, err)
		}
		seed, err := MnemonicToSeed(v[1], "TREZOR")
		if err != nil || hex.EncodeToString(seed) != v[2] {
			t.Fatalf("MnemonicToSeed(%q) = %x, %v; want %s", v[1], seed, err, v[2])
		}
		// The fourth column is the BIP-32 root key of that seed.
		n, err := masterNode(CurveSecp256k1, seed)
		if err != nil {
			t.Fatal(err)
		}
		chain, key := decodeXprv(t, v[3])
		if !bytes.Equal(n.chain[:], chain) || !bytes.Equal(n.key[:], key) {
			t.Fatalf("root of %q does not match %s", v[1], v[3])
		}
	}
}

func TestMnemonicValidation(t *testing.T) {
	valid := "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
	tests := []struct {
		name, mnemonic, wantDetail string
	}{
		{"checksum mismatch", strings.Replace(valid, "about", "abandon", 1), "checksum mismatch"},
		{
			"eleven words",
			"abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about",
			"got 11",
		},
		{"thirteen words", valid + " about", "got 13"},
		{"empty", "", "got 0"},
		{"unknown word", strings.Replace(valid, "about", "latchkey", 1), "word 12 is not in the BIP-39 word list"},
		{"mixed languages", strings.Replace(valid, "about", "的", 1), "not in the BIP-39 word list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateMnemonic(tt.mnemonic)
			if !errors.Is(err, ErrInvalidMnemonic) {
				t.Fatalf("ValidateMnemonic = %v, want ErrInvalidMnemonic", err)
			}
			if !strings.Contains(err.Error(), "invalid mnemonic") || !strings.Contains(err.Error(), tt.wantDetail) {
				t.Fatalf("error %q lacks %q", err, tt.wantDetail)
			}
			if strings.Contains(err.Error(), "latchkey") || strings.Contains(err.Error(), "abandon") {
				t.Fatalf("error %q leaks mnemonic words", err)
			}
			if _, err := MnemonicToSeed(tt.mnemonic, ""); !errors.Is(err, ErrInvalidMnemonic) {
				t.Fatalf("MnemonicToSeed accepted an invalid mnemonic: %v", err)
			}
		})
	}
	// White space is not significant: extra spaces and tabs give the canonical seed.
	want, _ := MnemonicToSeed(valid, "")
	got, err := MnemonicToSeed("  "+strings.ReplaceAll(valid, " ", " \t ")+"\n", "")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("white space changed the seed: %v", err)
	}
}

func TestNewMnemonic(t *testing.T) {
	for _, n := range []int{12, 15, 18, 21, 24} {
		m, err := NewMnemonic(n)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(strings.Fields(m)); got != n {
			t.Fatalf("NewMnemonic(%d) has %d words", n, got)
		}
		if err := ValidateMnemonic(m); err != nil {
			t.Fatalf("NewMnemonic(%d) is invalid: %v", n, err)
		}
	}
	a, _ := NewMnemonic(24)
	b, _ := NewMnemonic(24)
	if a == b {
		t.Fatal("two fresh mnemonics are equal")
	}
	for _, n := range []int{0, 11, 13, 25} {
		if _, err := NewMnemonic(n); err == nil {
			t.Fatalf("NewMnemonic(%d) succeeded", n)
		}
	}
}

func TestConvertMnemonic(t *testing.T) {
	src := "legal winner thank year wave sausage worth useful legal winner thank yellow"
	entropy, _, err := ParseMnemonic(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range Languages {
		t.Run(string(lang), func(t *testing.T) {
			m, err := ConvertMnemonic(src, lang)
			if err != nil {
				t.Fatal(err)
			}
			ent, gotLang, err := ParseMnemonic(m)
			if err != nil || !bytes.Equal(ent, entropy) {
				t.Fatalf("round trip of %s failed: %v", lang, err)
			}
			// Simplified and traditional Chinese share characters; the entropy is what matters.
			if gotLang != lang &&
				!(strings.Contains(string(lang), "CHINESE") && strings.Contains(string(gotLang), "CHINESE")) {
				t.Fatalf("detected %s, want %s", gotLang, lang)
			}
			sep := " "
			if lang == LanguageJapanese {
				sep = "\u3000"
			}
			if len(strings.Split(m, sep)) != 12 {
				t.Fatalf("%s mnemonic not joined by %q: %q", lang, sep, m)
			}
			back, err := ConvertMnemonic(m, LanguageEnglish)
			if err != nil || back != src {
				t.Fatalf("back to English = %q, %v", back, err)
			}
		})
	}
	if _, err := ConvertMnemonic(src, Language("MNEMONIC_LANGUAGE_KLINGON")); err == nil {
		t.Fatal("unknown language accepted")
	}
}

// The BIP-39 document's Japanese vector (entropy 00…00, passphrase "㍍ガバヴァぱばぐゞちぢ十人十色",
// from bip32JP's test vectors) checks NFKD normalisation of both words and passphrase.
func TestJapaneseSeedNormalisation(t *testing.T) {
	m, err := EntropyToMnemonic(make([]byte, 16), LanguageJapanese)
	if err != nil {
		t.Fatal(err)
	}
	want := "あいこくしん　あいこくしん　あいこくしん　あいこくしん　あいこくしん　あいこくしん　あいこくしん　あいこくしん　あいこくしん　あいこくしん　あいこくしん　あおぞら"
	if m != want {
		t.Fatalf("japanese mnemonic = %q", m)
	}
	seed, err := MnemonicToSeed(m, "㍍ガバヴァぱばぐゞちぢ十人十色")
	if err != nil {
		t.Fatal(err)
	}
	const wantSeed = "a262d6fb6122ecf45be09c50492b31f92e9beb7d9a845987a02cefda57a15f9c467a17872029a9e92299b5cbdf306e3a0ee620245cbd508959b6cb7ca637bd55"
	if hex.EncodeToString(seed) != wantSeed {
		t.Fatalf("japanese seed = %x", seed)
	}
}

func FuzzParseMnemonic(f *testing.F) {
	f.Add("abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about")
	f.Add("あいこくしん　あいこくしん　あいこくしん")
	f.Add("")
	f.Add("\u3000\t zoo")
	f.Fuzz(func(t *testing.T, s string) {
		ent, lang, err := ParseMnemonic(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidMnemonic) {
				t.Fatalf("error %v does not wrap ErrInvalidMnemonic", err)
			}
			return
		}
		again, err := EntropyToMnemonic(ent, lang)
		if err != nil {
			t.Fatal(err)
		}
		ent2, _, err := ParseMnemonic(again)
		if err != nil || !bytes.Equal(ent, ent2) {
			t.Fatalf("re-encoding %q failed: %v", s, err)
		}
	})
}

// CanonicalMnemonic (import) joins the words of a valid mnemonic with single spaces and refuses
// an invalid one; NewMnemonicBytes makes valid mnemonics of each length.
func TestMnemonicBytes(t *testing.T) {
	const m = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
	got, err := CanonicalMnemonic(
		[]byte("  abandon abandon\tabandon abandon abandon abandon\nabandon abandon abandon abandon abandon   about "),
	)
	if err != nil || string(got) != m {
		t.Fatalf("CanonicalMnemonic = %q, %v", got, err)
	}
	if _, err := CanonicalMnemonic([]byte(m[:len(m)-5] + "abandon")); !errors.Is(err, ErrInvalidMnemonic) {
		t.Fatalf("a bad checksum: %v", err)
	}
	for _, words := range []int{12, 15, 18, 21, 24} {
		b, err := NewMnemonicBytes(LanguageEnglish, words)
		if err != nil || len(bytes.Fields(b)) != words || len(b) != cap(b) {
			t.Fatalf("%d words: %q (cap %d), %v", words, b, cap(b), err)
		}
		if err := ValidateMnemonicBytes(b); err != nil {
			t.Fatal(err)
		}
	}
}
