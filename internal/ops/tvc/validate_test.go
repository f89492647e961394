package tvc

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestParseImageRef(t *testing.T) {
	for _, tc := range []struct {
		ref string
		ok  bool
	}{
		{"alpine", true},
		{"library/alpine:3.20", true},
		{"ghcr.io/acme/pivot:1.2.3", true},
		{"localhost:5000/acme/pivot", true},
		{"localhost/pivot:latest", true},
		{"registry.example.com:443/a/b/c@sha256:" + strings.Repeat("0f", 32), true},
		{"acme/pivot:v1@sha256:" + strings.Repeat("ab", 32), true},
		{"acme/my_pivot__x/app-1/a.b/c---d", true},
		{"Docker.IO/acme/pivot", true}, // registry host names are case-insensitive
		{"", false},
		{"ghcr.io/Acme/pivot", false},
		{"https://ghcr.io/acme/pivot", false},
		{"acme//pivot", false},
		{"acme/pivot/", false},
		{"/acme/pivot", false},
		{"acme/pivot:", false},
		{"acme/pivot:-v1", false},
		{"acme/pivot:" + strings.Repeat("t", 129), false},
		{"acme/pivot@sha256:abc", false},
		{"acme/pivot@sha512:" + strings.Repeat("ab", 32), false},
		{"acme/pivot@sha256:" + strings.Repeat("AB", 32), false},
		{"acme/pi vot", false},
		{"acme/.pivot", false},
		{"acme/pivot.", false},
		{"acme/pi..vot", false},
		{"acme/pi___vot", false},
		{"acme/pi_-vot", false},
		{"host:99999/acme", false},
		{"host:08/acme", false},
		{"-host.io/acme", false},
		{strings.Repeat("a", MaxImageRefLen+1), false},
	} {
		err := ParseImageRef(tc.ref)
		if (err == nil) != tc.ok {
			t.Errorf("ParseImageRef(%q) = %v, want ok=%v", tc.ref, err, tc.ok)
		}
	}
}

func FuzzParseImageRef(f *testing.F) {
	for _, s := range []string{"alpine", "ghcr.io/acme/pivot:1.2.3", "localhost:5000/a@sha256:" + strings.Repeat("0", 64), "a/b__c", ":", "@", "a:b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ParseImageRef(s) != nil {
			return
		}
		// What is accepted is printable ASCII without spaces, within bounds.
		if len(s) > MaxImageRefLen {
			t.Fatalf("accepted %d bytes", len(s))
		}
		for i := 0; i < len(s); i++ {
			if s[i] <= ' ' || s[i] >= 0x7f {
				t.Fatalf("accepted %q", s)
			}
		}
	})
}

func p256(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func uncompressed(t testing.TB, k *ecdsa.PrivateKey) []byte {
	b, err := k.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPublicKeyFormsAndVerify(t *testing.T) {
	sign, enc := p256(t), p256(t)
	u := uncompressed(t, sign)
	c := elliptic.MarshalCompressed(elliptic.P256(), sign.X, sign.Y)
	pair := append(uncompressed(t, enc), u...)
	msg := []byte(`{"format":"latchkey.tvc.manifest.v1"}`)
	d := sha256.Sum256(msg)
	der, err := ecdsa.SignASN1(rand.Reader, sign, d[:])
	if err != nil {
		t.Fatal(err)
	}
	r, s, err := ecdsa.Sign(rand.Reader, sign, d[:])
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 64)
	r.FillBytes(raw[:32])
	s.FillBytes(raw[32:])
	for name, in := range map[string]string{
		"uncompressed":      hex.EncodeToString(u),
		"compressed":        hex.EncodeToString(c),
		"0x upper-case":     "0x" + strings.ToUpper(hex.EncodeToString(u)),
		"QuorumOS key pair": hex.EncodeToString(pair),
	} {
		k, err := ParsePublicKey(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if k.Hex != strings.ToLower(strings.TrimPrefix(in, "0x")) {
			t.Errorf("%s: Hex = %s", name, k.Hex)
		}
		for sigName, sig := range map[string][]byte{"raw": raw, "DER": der} {
			if err := k.Verify(msg, hex.EncodeToString(sig)); err != nil {
				t.Errorf("%s, %s signature: %v", name, sigName, err)
			}
			if err := k.Verify(append(msg, ' '), hex.EncodeToString(sig)); err == nil {
				t.Errorf("%s, %s signature verified over other bytes", name, sigName)
			}
		}
	}
	// The pair's encryption half does not sign.
	kp, _ := ParsePublicKey(hex.EncodeToString(append(u, uncompressed(t, enc)...)))
	if kp.Verify(msg, hex.EncodeToString(raw)) == nil {
		t.Error("a pair verified with its encryption half")
	}
	k, _ := ParsePublicKey(hex.EncodeToString(u))
	for _, bad := range []string{"", "zz", "00", hex.EncodeToString(raw[:63]), hex.EncodeToString(append(raw, 0))} {
		if k.Verify(msg, bad) == nil {
			t.Errorf("signature %q verified", bad)
		}
	}
	for _, bad := range []string{"", "xyz", "04", hex.EncodeToString(u[:64]), "04" + strings.Repeat("11", 64),
		"05" + hex.EncodeToString(u[1:]), hex.EncodeToString(append(u, u[:64]...)), "02" + strings.Repeat("ff", 32)} {
		if _, err := ParsePublicKey(bad); err == nil {
			t.Errorf("ParsePublicKey(%q) accepted", bad)
		}
	}
}

func FuzzParsePublicKey(f *testing.F) {
	f.Add("04" + strings.Repeat("11", 64))
	f.Add("02" + strings.Repeat("ab", 32))
	f.Add("0x")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParsePublicKey(s)
		if err != nil {
			return
		}
		if len(k.signing) != 65 || k.signing[0] != 4 {
			t.Fatalf("signing key %x", k.signing)
		}
		_ = k.Verify([]byte("m"), s)
	})
}

func TestQOSVersions(t *testing.T) {
	if err := CheckQOSVersions([]string{"v0.3.0", "v0.4.0+build.1"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{""}, {"v 1"}, {"a", "a"}, {strings.Repeat("v", 65)}} {
		if CheckQOSVersions(bad) == nil {
			t.Errorf("CheckQOSVersions(%q) accepted", bad)
		}
	}
	if checkQOSVersion("f", "anything-1.0", nil) != nil || checkQOSVersion("f", "v/1", nil) == nil {
		t.Error("free-form version labels")
	}
	if checkQOSVersion("f", "v1", []string{"v1"}) != nil || checkQOSVersion("f", "v2", []string{"v1"}) == nil {
		t.Error("configured versions")
	}
}
