package custody

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/latchkey/latchkey/internal/store/sqlite"
)

func openTestStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "k.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func testMaster(t testing.TB, b byte) *MasterKey {
	m, err := ParseMasterKey(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestKeyringSealOpenBindingAndRotation(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	kr, err := OpenKeyring(ctx, st, testMaster(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	b := Binding{OrgID: "org-1", Kind: "wallet", ID: "w-1"}
	secret := []byte("leaf lady until indicate praise final route toast cake minimum insect unknown")
	sealed, err := kr.Seal(secret, b)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, secret[:10]) {
		t.Fatal("sealed value contains plaintext")
	}
	got, err := kr.Open(sealed, b)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	// Moved to another record, org or kind: does not open.
	for _, other := range []Binding{{"org-2", "wallet", "w-1"}, {"org-1", "wallet", "w-2"}, {"org-1", "private_key", "w-1"}} {
		if _, err := kr.Open(sealed, other); !errors.Is(err, ErrUnseal) {
			t.Errorf("opened under %+v", other)
		}
	}
	tampered := append([]byte{}, sealed...)
	tampered[len(tampered)-1] ^= 1
	if _, err := kr.Open(tampered, b); !errors.Is(err, ErrUnseal) {
		t.Error("opened a tampered value")
	}
	// Rotation: new seals use version 2, old ones still open, also in a fresh process.
	v, err := kr.Rotate(ctx, st)
	if err != nil || v != 2 {
		t.Fatalf("Rotate = %d, %v", v, err)
	}
	sealed2, _ := kr.Seal(secret, b)
	if ver, _ := SealedVersion(sealed2); ver != 2 {
		t.Fatalf("new seal uses version %d", ver)
	}
	kr2, err := OpenKeyring(ctx, st, testMaster(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range [][]byte{sealed, sealed2} {
		if got, err := kr2.Open(s, b); err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("reopened keyring cannot open: %v", err)
		}
	}
	// MACs stay comparable across rotation.
	if !EqualMAC(kr.MAC("otp", []byte("123456")), kr2.MAC("otp", []byte("123456"))) {
		t.Fatal("MAC changed")
	}
	if EqualMAC(kr.MAC("otp", []byte("123456")), kr.MAC("other", []byte("123456"))) {
		t.Fatal("MAC purposes not separated")
	}
}

func TestKeyringWrongMasterKey(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	if _, err := OpenKeyring(ctx, st, testMaster(t, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenKeyring(ctx, st, testMaster(t, 2)); !errors.Is(err, ErrWrongMasterKey) {
		t.Fatalf("err = %v, want ErrWrongMasterKey", err)
	}
}

func TestParseMasterKey(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", true},
		{"  00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff  ", true},
		{"0011", false},
		{"zz112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", false},
	} {
		if _, err := ParseMasterKey([]byte(tc.in)); (err == nil) != tc.ok {
			t.Errorf("ParseMasterKey(%q) err = %v", tc.in, err)
		}
	}
}

func TestServerKeysStableAcrossLoads(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	kr, _ := OpenKeyring(ctx, st, testMaster(t, 1))
	a, err := LoadServerKeys(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadServerKeys(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, k := range AllServerKeys {
		if a.PublicKey(k) != b.PublicKey(k) || len(a.PublicKey(k)) != 130 {
			t.Fatalf("%s: %s vs %s", k, a.PublicKey(k), b.PublicKey(k))
		}
		if seen[a.PublicKey(k)] {
			t.Fatalf("%s reuses another key", k)
		}
		seen[a.PublicKey(k)] = true
	}
	sig, err := a.SignDigestRaw(Notarizer, make([]byte, 32))
	if err != nil || len(sig) != 64 {
		t.Fatalf("SignDigestRaw: %d bytes, %v", len(sig), err)
	}
}

func TestKeyringReloadsAfterRotationElsewhere(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	a, _ := OpenKeyring(ctx, st, testMaster(t, 1))
	b, _ := OpenKeyring(ctx, st, testMaster(t, 1))
	if _, err := a.Rotate(ctx, st); err != nil {
		t.Fatal(err)
	}
	bind := Binding{OrgID: "o", Kind: "k", ID: "i"}
	sealed, _ := a.Seal([]byte("x"), bind)
	if got, err := b.Open(sealed, bind); err != nil || string(got) != "x" {
		t.Fatalf("the other process cannot open a value sealed after rotation: %v", err)
	}
}
