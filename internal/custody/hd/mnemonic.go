package hd

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/text/unicode/norm"
)

// ErrInvalidMnemonic is wrapped by every mnemonic validation error. Its text is the documented
// Turnkey error fragment "invalid mnemonic".
var ErrInvalidMnemonic = errors.New("invalid mnemonic")

// Language names a BIP-39 word list by its wire value (swagger enum v1MnemonicLanguage).
type Language string

// The BIP-39 word lists Latchkey ships. LanguagePortuguese is not in Turnkey's enum; it is
// accepted for parsing and conversion as an extension.
const (
	LanguageEnglish            Language = "MNEMONIC_LANGUAGE_ENGLISH"
	LanguageSimplifiedChinese  Language = "MNEMONIC_LANGUAGE_SIMPLIFIED_CHINESE"
	LanguageTraditionalChinese Language = "MNEMONIC_LANGUAGE_TRADITIONAL_CHINESE"
	LanguageCzech              Language = "MNEMONIC_LANGUAGE_CZECH"
	LanguageFrench             Language = "MNEMONIC_LANGUAGE_FRENCH"
	LanguageItalian            Language = "MNEMONIC_LANGUAGE_ITALIAN"
	LanguageJapanese           Language = "MNEMONIC_LANGUAGE_JAPANESE"
	LanguageKorean             Language = "MNEMONIC_LANGUAGE_KOREAN"
	LanguagePortuguese         Language = "MNEMONIC_LANGUAGE_PORTUGUESE"
	LanguageSpanish            Language = "MNEMONIC_LANGUAGE_SPANISH"
)

// Languages lists every supported language, in the order ParseMnemonic tries them.
var Languages = []Language{
	LanguageEnglish, LanguageSimplifiedChinese, LanguageTraditionalChinese, LanguageCzech,
	LanguageFrench, LanguageItalian, LanguageJapanese, LanguageKorean, LanguagePortuguese,
	LanguageSpanish,
}

var wordlistFiles = map[Language]string{
	LanguageEnglish:            "english.txt",
	LanguageSimplifiedChinese:  "chinese_simplified.txt",
	LanguageTraditionalChinese: "chinese_traditional.txt",
	LanguageCzech:              "czech.txt",
	LanguageFrench:             "french.txt",
	LanguageItalian:            "italian.txt",
	LanguageJapanese:           "japanese.txt",
	LanguageKorean:             "korean.txt",
	LanguagePortuguese:         "portuguese.txt",
	LanguageSpanish:            "spanish.txt",
}

//go:embed wordlists/*.txt
var wordlistFS embed.FS

type wordlist struct {
	words []string       // NFC (composed) for display, index = 11-bit value
	index map[string]int // NFKD-normalised word -> index
}

var (
	wordlistsOnce sync.Once
	wordlists     map[Language]*wordlist
	wordlistsErr  error
)

func loadWordlists() (map[Language]*wordlist, error) {
	wordlistsOnce.Do(func() {
		wordlists = make(map[Language]*wordlist, len(wordlistFiles))
		for lang, file := range wordlistFiles {
			raw, err := wordlistFS.ReadFile("wordlists/" + file)
			if err != nil {
				wordlistsErr = err
				return
			}
			lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
			if len(lines) != 2048 {
				wordlistsErr = fmt.Errorf("hd: word list %s has %d words, want 2048", file, len(lines))
				return
			}
			wl := &wordlist{words: make([]string, 2048), index: make(map[string]int, 2048)}
			for i, w := range lines {
				w = strings.TrimSpace(w)
				// The published files are NFKD (decomposed); mnemonics are emitted composed
				// (NFC), which renders well and gives the same seed after NFKD.
				wl.words[i] = norm.NFC.String(w)
				wl.index[norm.NFKD.String(w)] = i
			}
			wordlists[lang] = wl
		}
	})
	return wordlists, wordlistsErr
}

func getWordlist(lang Language) (*wordlist, error) {
	all, err := loadWordlists()
	if err != nil {
		return nil, err
	}
	wl, ok := all[lang]
	if !ok {
		return nil, fmt.Errorf("hd: unsupported mnemonic language %q", string(lang))
	}
	return wl, nil
}

// separator returns the word separator of a language: U+3000 for Japanese, a space otherwise.
func separator(lang Language) string {
	if lang == LanguageJapanese {
		return "\u3000"
	}
	return " "
}

// NewMnemonic returns a fresh English mnemonic of 12, 15, 18, 21 or 24 words from crypto/rand.
// A Go string cannot be wiped: custody uses NewMnemonicBytes; this is for tests and clients.
func NewMnemonic(words int) (string, error) {
	m, err := NewMnemonicBytes(LanguageEnglish, words)
	defer wipeBytes(m)
	return string(m), err
}

// NewMnemonicBytes returns a fresh mnemonic in lang of 12, 15, 18, 21 or 24 words from
// crypto/rand, in a byte slice the caller wipes when done. No other copy of the words or the
// entropy is left behind.
func NewMnemonicBytes(lang Language, words int) ([]byte, error) {
	switch words {
	case 12, 15, 18, 21, 24:
	default:
		return nil, fmt.Errorf("hd: mnemonic length must be 12, 15, 18, 21 or 24 words, got %d", words)
	}
	var entropy [32]byte
	defer clear(entropy[:])
	if _, err := rand.Read(entropy[:words*4/3]); err != nil {
		return nil, err
	}
	return EntropyToMnemonicBytes(entropy[:words*4/3], lang)
}

// EntropyToMnemonic encodes 16, 20, 24, 28 or 32 bytes of entropy as a mnemonic in lang.
func EntropyToMnemonic(entropy []byte, lang Language) (string, error) {
	m, err := EntropyToMnemonicBytes(entropy, lang)
	defer wipeBytes(m)
	return string(m), err
}

// EntropyToMnemonicBytes is EntropyToMnemonic into a byte slice the caller wipes. The words are
// written straight into the result, which is sized up front so it never grows (a grown slice
// would leave a copy behind).
func EntropyToMnemonicBytes(entropy []byte, lang Language) ([]byte, error) {
	n := len(entropy)
	if n < 16 || n > 32 || n%4 != 0 {
		return nil, fmt.Errorf("hd: entropy must be 16, 20, 24, 28 or 32 bytes, got %d", n)
	}
	wl, err := getWordlist(lang)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(entropy)
	defer clear(sum[:])
	csBits := n * 8 / 32
	words := (n*8 + csBits) / 11
	// bit(i) reads the i-th bit of entropy || checksum.
	bit := func(i int) int {
		if i < n*8 {
			return int(entropy[i/8]>>(7-uint(i%8))) & 1
		}
		i -= n * 8
		return int(sum[i/8]>>(7-uint(i%8))) & 1
	}
	sep := separator(lang)
	var idx [24]int
	defer clear(idx[:])
	size := len(sep) * (words - 1)
	for w := 0; w < words; w++ {
		for b := 0; b < 11; b++ {
			idx[w] = idx[w]<<1 | bit(w*11+b)
		}
		size += len(wl.words[idx[w]])
	}
	out := make([]byte, 0, size)
	for w := 0; w < words; w++ {
		if w > 0 {
			out = append(out, sep...)
		}
		out = append(out, wl.words[idx[w]]...)
	}
	return out, nil
}

// ParseMnemonic validates a mnemonic (word count, word list, checksum) and returns its entropy
// and language. Words may be separated by any Unicode white space; input is NFKD-normalised
// before lookup. Errors wrap ErrInvalidMnemonic and never contain the words themselves.
func ParseMnemonic(mnemonic string) (entropy []byte, lang Language, err error) {
	return ParseMnemonicBytes([]byte(mnemonic))
}

// ParseMnemonicBytes is ParseMnemonic over a byte slice; the caller wipes the entropy. It leaves
// no copy of the words: a normalised copy (for words outside ASCII) and the word indexes are
// wiped before it returns.
func ParseMnemonicBytes(mnemonic []byte) (entropy []byte, lang Language, err error) {
	nfkd := normalized(mnemonic)
	defer nfkd.wipe()
	words := bytes.Fields(nfkd.b)
	switch len(words) {
	case 12, 15, 18, 21, 24:
	default:
		return nil, "", fmt.Errorf("%w: expected 12, 15, 18, 21 or 24 words, got %d", ErrInvalidMnemonic, len(words))
	}
	all, err := loadWordlists()
	if err != nil {
		return nil, "", err
	}
	var checksumFailed bool
	firstUnknown := -1
	var idx [24]int
	defer clear(idx[:])
	indexes := idx[:len(words)]
	for _, l := range Languages {
		wl := all[l]
		ok := true
		for i, w := range words {
			n, found := wl.index[string(w)] // a map lookup by string(b) copies nothing
			if !found {
				if l == LanguageEnglish {
					firstUnknown = i
				}
				ok = false
				break
			}
			indexes[i] = n
		}
		if !ok {
			continue
		}
		ent, good := decodeIndexes(indexes)
		if good {
			return ent, l, nil
		}
		wipeBytes(ent)
		checksumFailed = true
	}
	if checksumFailed {
		return nil, "", fmt.Errorf("%w: checksum mismatch", ErrInvalidMnemonic)
	}
	if firstUnknown >= 0 {
		return nil, "", fmt.Errorf("%w: word %d is not in the BIP-39 word list", ErrInvalidMnemonic, firstUnknown+1)
	}
	return nil, "", fmt.Errorf("%w: words are not all from one BIP-39 word list", ErrInvalidMnemonic)
}

// nfkd is the NFKD form of a secret: b is the input itself when it was already normalised (all
// ASCII, say), else a copy that wipe clears.
type nfkd struct {
	b     []byte
	owned bool
}

func normalized(s []byte) nfkd {
	if norm.NFKD.IsNormal(s) {
		return nfkd{b: s}
	}
	return nfkd{b: norm.NFKD.Bytes(s), owned: true}
}

func (n nfkd) wipe() {
	if n.owned {
		wipeBytes(n.b)
	}
}

// decodeIndexes turns 11-bit word indexes into entropy and reports whether the checksum matches.
func decodeIndexes(indexes []int) ([]byte, bool) {
	totalBits := len(indexes) * 11
	csBits := totalBits / 33
	entBits := totalBits - csBits
	var buf [33]byte
	defer clear(buf[:])
	for w, idx := range indexes {
		for b := 0; b < 11; b++ {
			if idx>>(10-uint(b))&1 == 1 {
				pos := w*11 + b
				buf[pos/8] |= 1 << (7 - uint(pos%8))
			}
		}
	}
	entropy := make([]byte, entBits/8)
	copy(entropy, buf[:])
	sum := sha256.Sum256(entropy)
	defer clear(sum[:])
	want := sum[0] >> (8 - uint(csBits))
	got := buf[entBits/8] >> (8 - uint(csBits))
	return entropy, want == got
}

// ValidateMnemonic reports whether mnemonic is a valid BIP-39 mnemonic in a supported language.
func ValidateMnemonic(mnemonic string) error {
	return ValidateMnemonicBytes([]byte(mnemonic))
}

// ValidateMnemonicBytes is ValidateMnemonic over a byte slice, leaving no copy behind.
func ValidateMnemonicBytes(mnemonic []byte) error {
	ent, _, err := ParseMnemonicBytes(mnemonic)
	wipeBytes(ent)
	return err
}

// ConvertMnemonic re-encodes a valid mnemonic's entropy in another language (for export). The
// seed of the result differs from the original's: BIP-39 seeds depend on the words.
func ConvertMnemonic(mnemonic string, to Language) (string, error) {
	m, err := ConvertMnemonicBytes([]byte(mnemonic), to)
	defer wipeBytes(m)
	return string(m), err
}

// ConvertMnemonicBytes is ConvertMnemonic over byte slices; the caller wipes the result.
func ConvertMnemonicBytes(mnemonic []byte, to Language) ([]byte, error) {
	ent, _, err := ParseMnemonicBytes(mnemonic)
	if err != nil {
		return nil, err
	}
	defer wipeBytes(ent)
	return EntropyToMnemonicBytes(ent, to)
}

// CanonicalMnemonic validates a mnemonic and returns its words joined by single spaces (as
// typed: not normalised), in a new slice the caller wipes.
func CanonicalMnemonic(mnemonic []byte) ([]byte, error) {
	if err := ValidateMnemonicBytes(mnemonic); err != nil {
		return nil, err
	}
	return joinFields(mnemonic), nil
}

// joinFields returns the white-space separated fields of s joined by single spaces, in a slice
// sized up front.
func joinFields(s []byte) []byte {
	fields := bytes.Fields(s)
	size := len(fields) - 1
	for _, f := range fields {
		size += len(f)
	}
	out := make([]byte, 0, max(size, 0))
	for i, f := range fields {
		if i > 0 {
			out = append(out, ' ')
		}
		out = append(out, f...)
	}
	return out
}

// MnemonicToSeed validates mnemonic and derives the 64-byte BIP-39 seed:
// PBKDF2-HMAC-SHA512(NFKD(words joined by single spaces), "mnemonic"+NFKD(passphrase), 2048).
// The words are re-joined canonically, so runs of white space or a Japanese U+3000 separator
// give the same seed as the canonical sentence (NFKD maps U+3000 to a space anyway).
func MnemonicToSeed(mnemonic, passphrase string) ([]byte, error) {
	return MnemonicBytesToSeed([]byte(mnemonic), []byte(passphrase))
}

// MnemonicBytesToSeed is MnemonicToSeed over byte slices; the caller wipes the seed. PBKDF2 runs
// on this package's HMAC-SHA512 (pbkdf2.go), whose key pads and hash states are wiped: the
// standard library's keeps the password XOR its pads in memory it never clears.
func MnemonicBytesToSeed(mnemonic, passphrase []byte) ([]byte, error) {
	if err := ValidateMnemonicBytes(mnemonic); err != nil {
		return nil, err
	}
	nm := normalized(mnemonic)
	defer nm.wipe()
	sentence := joinFields(nm.b)
	defer wipeBytes(sentence)
	np := normalized(passphrase)
	defer np.wipe()
	salt := make([]byte, 0, len("mnemonic")+len(np.b))
	salt = append(append(salt, "mnemonic"...), np.b...)
	defer wipeBytes(salt)
	seed := make([]byte, 64)
	pbkdf2SHA512(sentence, salt, 2048, seed)
	return seed, nil
}

func wipeBytes(b []byte) {
	clear(b)
}
