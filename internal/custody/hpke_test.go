package custody

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
)

func TestDecryptCredentialBundleVector(t *testing.T) {
	var v struct{ Bundle, ReceiverPrivateKey, Plaintext string }
	b, err := os.ReadFile("testdata/credential_bundle.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	got, err := DecryptCredentialBundle(v.Bundle, v.ReceiverPrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != v.Plaintext {
		t.Fatalf("plaintext = %x, want %s", got, v.Plaintext)
	}
}

func TestSessionCredentialRoundTrip(t *testing.T) {
	recv, _ := ecdh.P256().GenerateKey(rand.Reader)
	for _, form := range []string{"uncompressed", "compressed"} {
		target := hex.EncodeToString(recv.PublicKey().Bytes())
		if form == "compressed" {
			target = hex.EncodeToString(P256Compressed(recv.PublicKey().Bytes()))
		}
		pub, bundle, err := NewSessionCredential(target)
		if err != nil {
			t.Fatal(err)
		}
		scalar, err := DecryptCredentialBundle(bundle, hex.EncodeToString(recv.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", form, err)
		}
		k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), scalar)
		if err != nil {
			t.Fatal(err)
		}
		kp, _ := k.PublicKey.Bytes()
		if hex.EncodeToString(P256Compressed(kp)) != pub {
			t.Fatalf("%s: decrypted key does not match the returned public key", form)
		}
	}
}

func TestSessionCredentialRejectsBadTarget(t *testing.T) {
	for _, target := range []string{"", "zz", "02" + "00", "04" + hex.EncodeToString(make([]byte, 64))} {
		if _, _, err := NewSessionCredential(target); err == nil {
			t.Errorf("target %q accepted", target)
		}
	}
}

func TestDecryptCredentialBundleRejectsTampering(t *testing.T) {
	recv, _ := ecdh.P256().GenerateKey(rand.Reader)
	_, bundle, err := NewSessionCredential(hex.EncodeToString(recv.PublicKey().Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := ecdh.P256().GenerateKey(rand.Reader)
	if _, err := DecryptCredentialBundle(bundle, hex.EncodeToString(other.Bytes())); err == nil {
		t.Fatal("opened with the wrong key")
	}
	bad := []byte(bundle)
	bad[10] ^= 1
	if _, err := DecryptCredentialBundle(string(bad), hex.EncodeToString(recv.Bytes())); err == nil {
		t.Fatal("opened a tampered bundle")
	}
}
