package custody

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// SealShamir is the seal whose master key exists only as shares held by people (Shamir's
// secret sharing): any Threshold of the Shares rebuild it. Nothing in the store opens it; a
// server starts sealed and waits for the shares (docs/operations.md, "Production custody").
const SealShamir = "shamir"

// MaxShares is the most shares a master key can be split into (the x coordinates 1…255 of
// GF(2^8)).
const MaxShares = 255

// A share is, in bytes: version, the split's 4-byte id, the threshold, x, y (one byte of
// GF(2^8) per byte of the master key) and the first 4 bytes of SHA-256 of what precedes them.
// Its text form is those bytes in hex: 88 characters.
const (
	shareVersion  = 1
	shareSplitLen = 4
	shareSumLen   = 4
	shareLen      = 1 + shareSplitLen + 1 + 1 + MasterKeySize + shareSumLen
	// ShareTextLen is the length of a share's text form.
	ShareTextLen = 2 * shareLen
)

// ShamirSeal is the seal record's part of a Shamir seal: no secret. ShareTags[x-1] is an HMAC
// of share x under a key derived from Salt, so a wrong share is named when it is given; the
// Verifier is an HMAC under a key derived from the master key, so the combined key is checked
// before anything uses it.
type ShamirSeal struct {
	Shares    int      `json:"shares"`
	Threshold int      `json:"threshold"`
	SplitID   string   `json:"splitId"`
	Salt      []byte   `json:"salt"`
	ShareTags [][]byte `json:"shareTags"`
	Verifier  []byte   `json:"verifier"`
}

// CheckShamir refuses a split that Shamir's scheme over GF(2^8) cannot make or that protects
// nothing: 1 < threshold ≤ shares ≤ 255.
func CheckShamir(shares, threshold int) error {
	switch {
	case shares < 2 || shares > MaxShares:
		return fmt.Errorf("--key-shares %d: give between 2 and %d shares", shares, MaxShares)
	case threshold < 2:
		return fmt.Errorf(
			"--key-threshold %d: at least 2 shares must be needed (one share alone would be the master key)",
			threshold,
		)
	case threshold > shares:
		return fmt.Errorf(
			"--key-threshold %d is more than --key-shares %d: the master key could never be rebuilt",
			threshold,
			shares,
		)
	}
	return nil
}

// Shares are the text forms of a new split's shares, to be shown once and wiped.
type Shares struct {
	text      [][]byte
	threshold int
}

// Threshold is how many shares unseal.
func (s *Shares) Threshold() int { return s.threshold }

// Len is the number of shares.
func (s *Shares) Len() int { return len(s.text) }

// Text is share i (0-based) in text form; it is wiped by Wipe.
func (s *Shares) Text(i int) []byte { return s.text[i] }

// WriteTo writes the shares, one labelled line each.
func (s *Shares) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for i, t := range s.text {
		n, err := fmt.Fprintf(w, "Unseal share %d of %d (any %d unseal): %s\n", i+1, len(s.text), s.threshold, t)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Wipe zeroes the shares' text.
func (s *Shares) Wipe() {
	for _, t := range s.text {
		clear(t)
	}
}

// SplitMasterKey splits m into n shares of which any k rebuild it, and returns the seal
// record's part (no secret) with the shares.
func SplitMasterKey(m *MasterKey, n, k int) (*ShamirSeal, *Shares, error) {
	if err := CheckShamir(n, k); err != nil {
		return nil, nil, err
	}
	seal := &ShamirSeal{Shares: n, Threshold: k, Salt: make([]byte, 32), ShareTags: make([][]byte, n)}
	var split [shareSplitLen]byte
	if _, err := rand.Read(split[:]); err != nil {
		return nil, nil, err
	}
	if _, err := rand.Read(seal.Salt); err != nil {
		return nil, nil, err
	}
	seal.SplitID = hex.EncodeToString(split[:])
	ys, err := shamirSplit(m.k[:], n, k)
	if err != nil {
		return nil, nil, err
	}
	out := &Shares{threshold: k}
	var raw [shareLen]byte
	for i, y := range ys {
		x := byte(i + 1)
		seal.ShareTags[i] = seal.shareTag(x, y)
		encodeShare(&raw, split, byte(k), x, y)
		t := make([]byte, ShareTextLen)
		hex.Encode(t, raw[:])
		out.text = append(out.text, t)
		clear(y)
	}
	clear(raw[:])
	seal.Verifier = seal.verifier(m)
	return seal, out, nil
}

func (s *ShamirSeal) shareTag(x byte, y []byte) []byte {
	key := hkdfKey(s.Salt, "latchkey/shamir/share/v1")
	return hmacSHA256(key, append([]byte{x}, y...))
}

func (s *ShamirSeal) verifier(m *MasterKey) []byte {
	key := hkdfKey(m.k[:], "latchkey/shamir/verifier/v1")
	defer clear(key)
	return hmacSHA256(key, append([]byte(s.SplitID), s.Salt...))
}

// Check reports whether m is the master key this seal was made from (constant time).
func (s *ShamirSeal) Check(m *MasterKey) bool {
	return subtle.ConstantTimeCompare(s.verifier(m), s.Verifier) == 1
}

func encodeShare(raw *[shareLen]byte, split [shareSplitLen]byte, k, x byte, y []byte) {
	raw[0] = shareVersion
	copy(raw[1:], split[:])
	raw[5], raw[6] = k, x
	copy(raw[7:], y)
	sum := sha256.Sum256(raw[:shareLen-shareSumLen])
	copy(raw[shareLen-shareSumLen:], sum[:shareSumLen])
}

// share is one parsed share; y is wiped by the caller.
type share struct {
	split     [shareSplitLen]byte
	threshold byte
	x         byte
	y         [MasterKeySize]byte
}

// ErrShareFormat means the text is not a share at all.
var ErrShareFormat = errors.New("not an unseal share: a share is 88 hexadecimal characters as latchkey init printed it")

// parseShare reads a share's text form (whitespace and '-' are ignored, hex in either case).
// Its errors never quote the text.
func parseShare(text []byte, sh *share) error {
	var raw [shareLen]byte
	defer clear(raw[:])
	n := 0
	hi, odd := byte(0), false
	for _, c := range text {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '-':
			continue
		default:
			return ErrShareFormat
		}
		if !odd {
			hi, odd = v, true
			continue
		}
		if n == shareLen {
			return ErrShareFormat
		}
		raw[n], odd, n = hi<<4|v, false, n+1
	}
	if n != shareLen || odd {
		return ErrShareFormat
	}
	if raw[0] != shareVersion {
		return fmt.Errorf("an unseal share of an unknown format (version %d)", raw[0])
	}
	sum := sha256.Sum256(raw[:shareLen-shareSumLen])
	if subtle.ConstantTimeCompare(sum[:shareSumLen], raw[shareLen-shareSumLen:]) != 1 {
		return errors.New("the share's checksum does not match: it is mistyped or damaged")
	}
	copy(sh.split[:], raw[1:5])
	sh.threshold, sh.x = raw[5], raw[6]
	copy(sh.y[:], raw[7:7+MasterKeySize])
	if sh.x == 0 || sh.threshold < 2 {
		clear(sh.y[:])
		return errors.New("the share's coordinates are invalid")
	}
	return nil
}

// ShareError is a share refused when given: X names it (0 when the text names none).
type ShareError struct {
	X      int
	Reason string
	// Repeated is set for a share already given in this round: it is refused without resetting
	// the progress (the others are wrong shares, which do reset it).
	Repeated bool
}

func (e *ShareError) Error() string {
	if e.X == 0 {
		return e.Reason
	}
	return fmt.Sprintf("share %d: %s", e.X, e.Reason)
}

// ShamirUnsealer gathers shares until Threshold of them rebuild the master key. It is not safe
// for concurrent use (the server serialises it). The shares it holds are wiped when the key
// is rebuilt, when a wrong share resets it, and by Reset.
type ShamirUnsealer struct {
	seal *ShamirSeal
	xs   []byte
	ys   [][MasterKeySize]byte
}

// NewShamirUnsealer starts gathering shares for seal.
func NewShamirUnsealer(seal *ShamirSeal) *ShamirUnsealer {
	return &ShamirUnsealer{seal: seal, ys: make([][MasterKeySize]byte, 0, seal.Threshold)}
}

// Progress is the number of valid shares given so far.
func (u *ShamirUnsealer) Progress() int { return len(u.xs) }

// Reset wipes the shares given so far.
func (u *ShamirUnsealer) Reset() {
	for i := range u.ys {
		clear(u.ys[i][:])
	}
	u.xs, u.ys = u.xs[:0], u.ys[:0]
}

// Add takes one share's text (which the caller wipes). It returns the master key once
// Threshold shares are in (and checked against the verifier), nil before. A share that is
// malformed, from another split, not one this seal issued, or already given is a *ShareError;
// all but the repeat also reset the progress (wipe the shares given so far).
func (u *ShamirUnsealer) Add(text []byte) (*MasterKey, error) {
	var sh share
	defer clear(sh.y[:])
	if err := parseShare(text, &sh); err != nil {
		u.Reset()
		return nil, &ShareError{Reason: err.Error()}
	}
	x := int(sh.x)
	refuse := func(reason string) (*MasterKey, error) {
		u.Reset()
		return nil, &ShareError{X: x, Reason: reason}
	}
	split, err := hex.DecodeString(u.seal.SplitID)
	if err != nil || subtle.ConstantTimeCompare(split, sh.split[:]) != 1 {
		return refuse(
			"it belongs to another split of a master key (another deployment, or shares replaced by a new init)",
		)
	}
	if int(sh.threshold) != u.seal.Threshold || x > u.seal.Shares || x > len(u.seal.ShareTags) {
		return refuse(fmt.Sprintf("it is not one of this deployment's %d shares", u.seal.Shares))
	}
	if subtle.ConstantTimeCompare(u.seal.shareTag(sh.x, sh.y[:]), u.seal.ShareTags[x-1]) != 1 {
		return refuse("it is not the share this deployment issued under that number (altered or forged)")
	}
	for _, have := range u.xs {
		if have == sh.x {
			return nil, &ShareError{X: x, Reason: "it was already given; give a different share", Repeated: true}
		}
	}
	u.xs = append(u.xs, sh.x)
	u.ys = append(u.ys, sh.y)
	if len(u.xs) < u.seal.Threshold {
		return nil, nil
	}
	ys := make([][]byte, len(u.ys))
	for i := range u.ys {
		ys[i] = u.ys[i][:]
	}
	m := newMasterKey()
	err = shamirCombine(m.k[:], u.xs, ys)
	u.Reset()
	if err != nil || !u.seal.Check(m) {
		m.Wipe()
		return nil, &ShareError{Reason: "the shares do not rebuild this deployment's master key; start again"}
	}
	return m, nil
}

// ---- Shamir's secret sharing over GF(2^8) ----
//
// The field is GF(2)[x]/(x^8+x^4+x^3+x+1). Multiplication is branch-free and table-free so its
// time does not depend on the secret bytes.

func gfMul(a, b byte) byte {
	var p byte
	for range 8 {
		p ^= -(b & 1) & a
		carry := -(a >> 7)
		a = a<<1 ^ carry&0x1b
		b >>= 1
	}
	return p
}

// gfInv is a^254 (a ≠ 0); the exponent is public.
func gfInv(a byte) byte {
	r, base := byte(1), a
	for e := 254; e > 0; e >>= 1 {
		if e&1 == 1 {
			r = gfMul(r, base)
		}
		base = gfMul(base, base)
	}
	return r
}

// shamirSplit returns y[i] = p_j(i+1) for i in 0…n-1, one random polynomial p_j of degree k-1
// per byte j of secret, with p_j(0) = secret[j].
func shamirSplit(secret []byte, n, k int) ([][]byte, error) {
	ys := make([][]byte, n)
	for i := range ys {
		ys[i] = make([]byte, len(secret))
	}
	coef := make([]byte, k)
	defer clear(coef)
	for j, s := range secret {
		coef[0] = s
		if _, err := rand.Read(coef[1:]); err != nil {
			return nil, err
		}
		for i := range n {
			ys[i][j] = gfEval(coef, byte(i+1))
		}
	}
	return ys, nil
}

// gfEval evaluates the polynomial coef[0] + coef[1]x + … at x (Horner).
func gfEval(coef []byte, x byte) byte {
	var y byte
	for i := len(coef) - 1; i >= 0; i-- {
		y = gfMul(y, x) ^ coef[i]
	}
	return y
}

// shamirCombine writes into out the value at x = 0 of the polynomial through the points
// (xs[i], ys[i][j]) for each byte j (Lagrange interpolation). The x coordinates must be
// distinct and non-zero.
func shamirCombine(out []byte, xs []byte, ys [][]byte) error {
	return shamirInterpolate(out, 0, xs, ys)
}

// shamirInterpolate writes into out the value at x of the polynomial through the points.
func shamirInterpolate(out []byte, x byte, xs []byte, ys [][]byte) error {
	if len(xs) < 2 || len(xs) != len(ys) {
		return errors.New("custody: at least two shares are needed")
	}
	for i, xi := range xs {
		if xi == 0 || len(ys[i]) != len(out) {
			return errors.New("custody: a share's coordinates are invalid")
		}
		for _, xj := range xs[:i] {
			if xi == xj {
				return fmt.Errorf("custody: share %d is given twice", xi)
			}
		}
	}
	clear(out)
	for i, xi := range xs {
		// l_i(x) = Π_{m≠i} (x - x_m) / (x_i - x_m); subtraction is XOR.
		num, den := byte(1), byte(1)
		for m, xm := range xs {
			if m != i {
				num = gfMul(num, x^xm)
				den = gfMul(den, xi^xm)
			}
		}
		l := gfMul(num, gfInv(den))
		for j := range out {
			out[j] ^= gfMul(ys[i][j], l)
		}
	}
	return nil
}

// Forget wipes the keyring's data keys and its master key from memory (a server being sealed):
// the keyring opens and seals nothing afterwards. The AEADs made from the data keys are
// dropped for the garbage collector; their key schedules cannot be reached to be zeroed.
func (kr *Keyring) Forget() {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	for _, k := range kr.rawKeys {
		clear(k)
	}
	kr.keys, kr.rawKeys, kr.st, kr.source = nil, nil, nil, nil
	kr.master.Wipe()
}
