package custody

import (
	"bytes"
	"crypto/rand"
	"errors"
	"math/big"
	"strings"
	"testing"
)

func TestGFArithmetic(t *testing.T) {
	// Known products in the AES field, and every non-zero element times its inverse is 1.
	for _, c := range []struct{ a, b, want byte }{{0x57, 0x83, 0xc1}, {0x57, 0x13, 0xfe}, {0x02, 0x80, 0x1b}, {0, 0x53, 0}, {1, 0xca, 0xca}} {
		if got := gfMul(c.a, c.b); got != c.want {
			t.Errorf("%#x·%#x = %#x, want %#x", c.a, c.b, got, c.want)
		}
	}
	for a := 1; a < 256; a++ {
		if gfMul(byte(a), gfInv(byte(a))) != 1 {
			t.Fatalf("%#x has no inverse", a)
		}
	}
}

func randomSubset(t *testing.T, n, k int) []int {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j, _ := rand.Int(rand.Reader, big.NewInt(int64(i+1)))
		perm[i], perm[j.Int64()] = perm[j.Int64()], perm[i]
	}
	return perm[:k]
}

// Any K of N shares rebuild the secret; K-1 shares are consistent with every secret (for any
// candidate there is a K-th point making it the answer), so they reveal nothing checkable.
func TestShamirProperties(t *testing.T) {
	for _, c := range []struct{ n, k int }{{2, 2}, {3, 2}, {5, 3}, {10, 10}, {255, 2}, {255, 255}, {7, 4}} {
		secret := make([]byte, MasterKeySize)
		rand.Read(secret)
		ys, err := shamirSplit(secret, c.n, c.k)
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 5; round++ {
			idx := randomSubset(t, c.n, c.k)
			xs, pick := make([]byte, c.k), make([][]byte, c.k)
			for i, j := range idx {
				xs[i], pick[i] = byte(j+1), ys[j]
			}
			got := make([]byte, MasterKeySize)
			if err := shamirCombine(got, xs, pick); err != nil || !bytes.Equal(got, secret) {
				t.Fatalf("%d of %d: shares %v do not rebuild the secret (%v)", c.k, c.n, xs, err)
			}
			// K-1 shares plus a point at 0 of any candidate secret: the polynomial through them
			// gives a K-th share that combines to the candidate.
			if c.k-1 >= 1 && c.n < 255 {
				candidate := make([]byte, MasterKeySize)
				rand.Read(candidate)
				xs1 := append([]byte{0}, xs[:c.k-1]...)
				ys1 := append([][]byte{candidate}, pick[:c.k-1]...)
				other := byte(0)
				for x := 1; x <= 255 && other == 0; x++ {
					if !bytes.Contains(xs[:c.k-1], []byte{byte(x)}) {
						other = byte(x)
					}
				}
				forged := make([]byte, MasterKeySize)
				if err := interpolateWithZero(forged, other, xs1, ys1); err != nil {
					t.Fatal(err)
				}
				if err := shamirCombine(got, append(append([]byte{}, xs[:c.k-1]...), other), append(append([][]byte{}, pick[:c.k-1]...), forged)); err != nil ||
					!bytes.Equal(got, candidate) {
					t.Fatalf("%d of %d: K-1 shares are not consistent with an arbitrary secret", c.k, c.n)
				}
			}
		}
		if c.k >= 2 {
			got := make([]byte, MasterKeySize)
			if err := shamirCombine(got, []byte{1, 1}, [][]byte{ys[0], ys[0]}); err == nil ||
				!strings.Contains(err.Error(), "twice") {
				t.Fatalf("a duplicate x: %v", err)
			}
		}
	}
}

// interpolateWithZero is shamirInterpolate allowing the point x = 0 (the candidate secret).
func interpolateWithZero(out []byte, x byte, xs []byte, ys [][]byte) error {
	for j := range out {
		var v byte
		for i, xi := range xs {
			num, den := byte(1), byte(1)
			for m, xm := range xs {
				if m != i {
					num, den = gfMul(num, x^xm), gfMul(den, xi^xm)
				}
			}
			v ^= gfMul(ys[i][j], gfMul(num, gfInv(den)))
		}
		out[j] = v
	}
	return nil
}

func TestCheckShamir(t *testing.T) {
	for _, c := range []struct {
		n, k int
		want string
	}{{3, 2, ""}, {255, 255, ""}, {2, 2, ""}, {3, 4, "more than --key-shares"}, {256, 2, "between 2 and 255"}, {3, 1, "at least 2"}, {1, 1, "between 2"}, {0, 0, "between 2"}} {
		err := CheckShamir(c.n, c.k)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d/%d: %v, want %q", c.n, c.k, err, c.want)
		}
	}
}

func TestShamirUnsealer(t *testing.T) {
	m, _ := NewMasterKey()
	seal, shares, err := SplitMasterKey(m, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer shares.Wipe()
	var printed bytes.Buffer
	shares.WriteTo(&printed)
	if strings.Count(printed.String(), "Unseal share ") != 3 ||
		!strings.Contains(printed.String(), "share 2 of 3 (any 2 unseal): ") {
		t.Fatalf("printed:\n%s", printed.String())
	}
	other, _ := NewMasterKey()
	_, otherShares, _ := SplitMasterKey(other, 3, 2)
	u := NewShamirUnsealer(seal)
	text := func(i int) []byte { return append([]byte{}, shares.Text(i)...) }

	// One share: progress 1. A wrong share (another split's): named, progress reset.
	if k, err := u.Add(text(0)); k != nil || err != nil || u.Progress() != 1 {
		t.Fatalf("first share: %v %v %d", k, err, u.Progress())
	}
	var se *ShareError
	if _, err := u.Add(append([]byte{}, otherShares.Text(1)...)); !errors.As(err, &se) || se.X != 2 ||
		!strings.Contains(err.Error(), "another split") ||
		u.Progress() != 0 {
		t.Fatalf("a share of another split: %v, progress %d", err, u.Progress())
	}
	// A mistyped share: the checksum catches it.
	bad := text(1)
	if bad[20] == '0' {
		bad[20] = '1'
	} else {
		bad[20] = '0'
	}
	if _, err := u.Add(bad); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a mistyped share: %v", err)
	}
	// A forged share: right split, right checksum, wrong y.
	var raw [shareLen]byte
	var sh share
	if err := parseShare(text(2), &sh); err != nil {
		t.Fatal(err)
	}
	sh.y[0] ^= 1
	encodeShare(&raw, sh.split, sh.threshold, sh.x, sh.y[:])
	forged := []byte(strings.ToUpper(string(hexBytes(raw[:]))))
	if _, err := u.Add(forged); !errors.As(err, &se) || se.X != 3 ||
		!strings.Contains(err.Error(), "altered or forged") {
		t.Fatalf("a forged share: %v", err)
	}
	// The same share twice is refused without losing progress.
	u.Add(text(2))
	if _, err := u.Add(text(2)); err == nil || !strings.Contains(err.Error(), "already given") || u.Progress() != 1 {
		t.Fatalf("a repeated share: %v %d", err, u.Progress())
	}
	// Two good shares (with separators and spaces): the master key.
	spaced := []byte(" " + string(text(0)[:10]) + "-" + string(text(0)[10:]) + "\n")
	k, err := u.Add(spaced)
	if err != nil || k == nil || !bytes.Equal(k.k[:], m.k[:]) || u.Progress() != 0 {
		t.Fatalf("two shares: %v", err)
	}
	if !seal.Check(k) || seal.Check(other) {
		t.Fatal("the verifier does not tell the master key")
	}
}

func hexBytes(b []byte) []byte {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return out
}

// FuzzParseShare: the share parser takes untrusted bytes (the unseal endpoint's body): it never
// panics, accepts only what it would print, and never quotes its input in an error.
func FuzzParseShare(f *testing.F) {
	m, _ := NewMasterKey()
	_, shares, _ := SplitMasterKey(m, 3, 2)
	f.Add(append([]byte{}, shares.Text(0)...))
	f.Add([]byte(strings.Repeat("0", ShareTextLen)))
	f.Add([]byte("01-02 zz"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var sh share
		err := parseShare(b, &sh)
		if err != nil {
			if len(b) > 8 && strings.Contains(err.Error(), string(b)) {
				t.Fatalf("the error quotes the input: %v", err)
			}
			return
		}
		var raw [shareLen]byte
		encodeShare(&raw, sh.split, sh.threshold, sh.x, sh.y[:])
		var again share
		if err := parseShare(hexBytes(raw[:]), &again); err != nil || again != sh {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func TestKeyringForget(t *testing.T) {
	st := openTestStore(t)
	m, _ := NewMasterKey()
	kr, err := OpenKeyring(t.Context(), st, m)
	if err != nil {
		t.Fatal(err)
	}
	raw := kr.rawKeys[kr.active]
	kr.Forget()
	if !bytes.Equal(raw, make([]byte, len(raw))) || !bytes.Equal(m.k[:], make([]byte, MasterKeySize)) {
		t.Fatal("Forget left key material in memory")
	}
	if _, err := kr.Open([]byte{sealFormat, 0, 0, 0, 1}, Binding{}); err == nil {
		t.Fatal("a forgotten keyring opened a value")
	}
}
