package custody

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hpke"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/mr-tron/base58"
)

// hpkeInfo is the HPKE info string of Turnkey's enclave channel.
var hpkeInfo = []byte("turnkey_hpke")

// ParseP256PublicKeyHex parses a P-256 public key given as hex (optional 0x), compressed
// (33 bytes) or uncompressed (65 bytes), and returns it uncompressed.
func ParseP256PublicKeyHex(s string) ([]byte, error) {
	b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))
	if err != nil {
		return nil, errors.New("not hex")
	}
	return P256Uncompressed(b)
}

// P256Uncompressed returns the 65-byte uncompressed form of a P-256 public key given
// compressed or uncompressed, checking the point is on the curve.
func P256Uncompressed(b []byte) ([]byte, error) {
	switch {
	case len(b) == 65 && b[0] == 4:
		if _, err := ecdh.P256().NewPublicKey(b); err != nil {
			return nil, errors.New("not a point on P-256")
		}
		return b, nil
	case len(b) == 33 && (b[0] == 2 || b[0] == 3):
		x, y := elliptic.UnmarshalCompressed(elliptic.P256(), b)
		if x == nil {
			return nil, errors.New("not a point on P-256")
		}
		return elliptic.Marshal(elliptic.P256(), x, y), nil //nolint:staticcheck // encoding only
	default:
		return nil, errors.New("a P-256 public key is 33 bytes compressed or 65 bytes uncompressed")
	}
}

// P256Compressed returns the 33-byte compressed form of an uncompressed P-256 key.
func P256Compressed(uncompressed []byte) []byte {
	out := make([]byte, 33)
	out[0] = 2 | uncompressed[64]&1
	copy(out[1:], uncompressed[1:33])
	return out
}

// hpkeSeal encrypts plaintext to the uncompressed P-256 key receiver the way Turnkey's enclaves
// do: base mode, aad = enc ‖ receiver. It returns enc (65 bytes, uncompressed) and ciphertext‖tag.
func hpkeSeal(receiver, plaintext []byte) (enc, ciphertext []byte, err error) {
	pub, err := ecdh.P256().NewPublicKey(receiver)
	if err != nil {
		return nil, nil, err
	}
	pk, err := hpke.NewDHKEMPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	enc, sender, err := hpke.NewSender(pk, hpke.HKDFSHA256(), hpke.AES256GCM(), hpkeInfo)
	if err != nil {
		return nil, nil, err
	}
	aad := append(append(make([]byte, 0, 130), enc...), receiver...)
	ct, err := sender.Seal(aad, plaintext)
	return enc, ct, err
}

// hpkeOpen is hpkeSeal's inverse for a receiver private key.
func hpkeOpen(receiver *ecdh.PrivateKey, enc, ciphertext []byte) ([]byte, error) {
	k, err := hpke.NewDHKEMPrivateKey(receiver)
	if err != nil {
		return nil, err
	}
	r, err := hpke.NewRecipient(enc, k, hpke.HKDFSHA256(), hpke.AES256GCM(), hpkeInfo)
	if err != nil {
		return nil, err
	}
	aad := append(append(make([]byte, 0, 130), enc...), receiver.PublicKey().Bytes()...)
	return r.Open(aad, ciphertext)
}

// NewSessionCredential creates a fresh P-256 API key for a session and returns its compressed
// public key (hex) and its private key encrypted to targetPublicKey as a credential bundle
// (bs58check of compressed enc ‖ ciphertext), which @turnkey/crypto's decryptCredentialBundle
// opens. The private key exists only for the duration of this call.
func NewSessionCredential(targetPublicKey string) (publicKeyHex, bundle string, err error) {
	target, err := ParseP256PublicKeyHex(targetPublicKey)
	if err != nil {
		return "", "", err
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	scalar, err := k.Bytes()
	if err != nil {
		return "", "", err
	}
	defer wipe(scalar)
	pub, err := k.PublicKey.Bytes()
	if err != nil {
		return "", "", err
	}
	enc, ct, err := hpkeSeal(target, scalar)
	if err != nil {
		return "", "", err
	}
	payload := append(P256Compressed(enc), ct...)
	return hex.EncodeToString(P256Compressed(pub)), base58CheckEncode(payload), nil
}

// DecryptCredentialBundle opens a credential bundle with the receiver's P-256 private key (hex
// scalar) and returns the plaintext. It is the client side of NewSessionCredential, used by the
// command-line client and tests.
func DecryptCredentialBundle(bundle, receiverPrivateKeyHex string) ([]byte, error) {
	raw, err := base58CheckDecode(bundle)
	if err != nil {
		return nil, err
	}
	if len(raw) < 33+16 {
		return nil, errors.New("credential bundle too short")
	}
	enc, err := P256Uncompressed(raw[:33])
	if err != nil {
		return nil, err
	}
	priv, err := parseP256Private(receiverPrivateKeyHex)
	if err != nil {
		return nil, err
	}
	return hpkeOpen(priv, enc, raw[33:])
}

func parseP256Private(h string) (*ecdh.PrivateKey, error) {
	b, err := hex.DecodeString(strings.TrimPrefix(h, "0x"))
	if err != nil {
		return nil, errors.New("private key is not hex")
	}
	defer wipe(b)
	return ecdh.P256().NewPrivateKey(b)
}

func base58CheckEncode(payload []byte) string {
	sum := doubleSHA256(payload)
	return base58.Encode(append(append(make([]byte, 0, len(payload)+4), payload...), sum[:4]...))
}

func base58CheckDecode(s string) ([]byte, error) {
	raw, err := base58.Decode(s)
	if err != nil || len(raw) < 4 {
		return nil, errors.New("not base58check")
	}
	payload, check := raw[:len(raw)-4], raw[len(raw)-4:]
	sum := doubleSHA256(payload)
	if string(sum[:4]) != string(check) {
		return nil, errors.New("base58check checksum mismatch")
	}
	return payload, nil
}

func doubleSHA256(b []byte) [32]byte {
	h := sha256.Sum256(b)
	return sha256.Sum256(h[:])
}
