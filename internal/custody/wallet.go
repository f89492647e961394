package custody

import (
	"errors"
	"fmt"

	"github.com/latchkey/latchkey/internal/custody/hd"
)

// Custodian performs every operation on key material: it creates and seals mnemonics and keys,
// derives accounts, signs, and encrypts exports to a client's key. Sealed values go to the store;
// plaintext never leaves this type's methods.
type Custodian struct {
	kr   *Keyring
	keys *ServerKeys
}

// NewCustodian returns a custodian over a keyring and the server keys.
func NewCustodian(kr *Keyring, keys *ServerKeys) *Custodian { return &Custodian{kr: kr, keys: keys} }

// Keys returns the server keys.
func (c *Custodian) Keys() *ServerKeys { return c.keys }

// ErrInvalidMnemonicLength is returned for a word count BIP-39 does not define.
var ErrInvalidMnemonicLength = errors.New("mnemonicLength must be 12, 15, 18, 21 or 24")

// NewMnemonic creates a wallet's mnemonic and returns it sealed for b.
func (c *Custodian) NewMnemonic(words int, b Binding) (sealed []byte, err error) {
	inSecret(func() { sealed, err = c.newMnemonic(words, b) })
	return sealed, err
}

func (c *Custodian) newMnemonic(words int, b Binding) ([]byte, error) {
	switch words {
	case 12, 15, 18, 21, 24:
	default:
		return nil, ErrInvalidMnemonicLength
	}
	m, err := hd.NewMnemonicBytes(hd.LanguageEnglish, words)
	if err != nil {
		return nil, err
	}
	defer wipe(m)
	return c.kr.Seal(m, b)
}

// AccountSpec is one account to derive from a wallet.
type AccountSpec struct {
	Curve   string // CURVE_*
	Path    string
	Binding Binding // where the account's sealed key will live
}

// DerivedAccount is the public result of a derivation, with the account key sealed.
type DerivedAccount struct {
	PublicKey             []byte // compressed SEC1 (secp256k1, P-256) or 32 bytes (Ed25519)
	UncompressedPublicKey []byte // 65 bytes for secp256k1 and P-256; nil for Ed25519
	SealedKey             []byte
}

// DeriveAccounts opens a wallet's mnemonic once, derives every account and seals each account's
// key for its binding, so that signing later opens one small sealed key instead of re-running
// PBKDF2 and the path derivation. The mnemonic, the seed and every node on the way are wiped
// before it returns: no request keeps a seed.
func (c *Custodian) DeriveAccounts(
	sealedMnemonic []byte,
	wallet Binding,
	specs []AccountSpec,
) (out []DerivedAccount, err error) {
	inSecret(func() { out, err = c.deriveAccounts(sealedMnemonic, wallet, specs) })
	return out, err
}

func (c *Custodian) deriveAccounts(
	sealedMnemonic []byte,
	wallet Binding,
	specs []AccountSpec,
) ([]DerivedAccount, error) {
	m, err := c.kr.Open(sealedMnemonic, wallet)
	if err != nil {
		return nil, err
	}
	defer wipe(m)
	seed, err := hd.MnemonicBytesToSeed(m, nil)
	if err != nil {
		return nil, err
	}
	defer wipe(seed)
	out := make([]DerivedAccount, 0, len(specs))
	for _, s := range specs {
		k, err := hd.DeriveKeyFromPath(hd.Curve(s.Curve), seed, s.Path)
		if err != nil {
			return nil, err
		}
		d, err := c.sealKey(k, s.Binding)
		k.Wipe()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// NewPrivateKey generates a standalone private key on curve, sealed for b.
func (c *Custodian) NewPrivateKey(curve string, b Binding) (d DerivedAccount, err error) {
	inSecret(func() { d, err = c.newPrivateKey(curve, b) })
	return d, err
}

func (c *Custodian) newPrivateKey(curve string, b Binding) (DerivedAccount, error) {
	k, err := hd.GenerateKey(hd.Curve(curve))
	if err != nil {
		return DerivedAccount{}, err
	}
	defer k.Wipe()
	return c.sealKey(k, b)
}

func (c *Custodian) sealKey(k *hd.Key, b Binding) (DerivedAccount, error) {
	raw := k.PrivateKey()
	defer wipe(raw)
	sealed, err := c.kr.Seal(raw, b)
	if err != nil {
		return DerivedAccount{}, err
	}
	d := DerivedAccount{PublicKey: k.PublicKey(), SealedKey: sealed}
	if k.Curve() != hd.CurveEd25519 {
		d.UncompressedPublicKey = k.UncompressedPublicKey()
	}
	return d, nil
}

// SignKind says which signature a key makes.
type SignKind int

// Signature kinds.
const (
	SignECDSA          SignKind = iota // secp256k1 or P-256 over a 32-byte digest, with recovery id
	SignEd25519                        // Ed25519 over the message
	SignSchnorr                        // BIP-340 over a 32-byte digest
	SignSchnorrTaproot                 // BIP-340 with the BIP-86 key-path tweak
)

// Signature is r, s (32 bytes each) and v (the ECDSA recovery id; 0 otherwise).
type Signature struct {
	R, S [32]byte
	V    byte
}

// Bytes is r‖s.
func (s Signature) Bytes() []byte { return append(append([]byte{}, s.R[:]...), s.S[:]...) }

// Sign opens a sealed key and signs msg (a digest for ECDSA and Schnorr, the message for
// Ed25519).
func (c *Custodian) Sign(
	sealedKey []byte,
	b Binding,
	curve string,
	kind SignKind,
	msg []byte,
) (sig Signature, err error) {
	inSecret(func() { sig, err = c.sign(sealedKey, b, curve, kind, msg) })
	return sig, err
}

func (c *Custodian) sign(sealedKey []byte, b Binding, curve string, kind SignKind, msg []byte) (Signature, error) {
	k, err := c.openKey(sealedKey, b, curve)
	if err != nil {
		return Signature{}, err
	}
	defer k.Wipe()
	var sig Signature
	switch kind {
	case SignECDSA:
		s, err := k.SignECDSA(msg)
		if err != nil {
			return sig, err
		}
		return Signature{R: s.R, S: s.S, V: s.V}, nil
	case SignEd25519:
		s, err := k.SignEd25519(msg)
		if err != nil {
			return sig, err
		}
		copy(sig.R[:], s[:32])
		copy(sig.S[:], s[32:])
		return sig, nil
	case SignSchnorr, SignSchnorrTaproot:
		s, err := k.SignSchnorr(msg, kind == SignSchnorrTaproot)
		if err != nil {
			return sig, err
		}
		copy(sig.R[:], s[:32])
		copy(sig.S[:], s[32:])
		return sig, nil
	}
	return sig, fmt.Errorf("custody: unknown signature kind %d", kind)
}

func (c *Custodian) openKey(sealedKey []byte, b Binding, curve string) (*hd.Key, error) {
	raw, err := c.kr.Open(sealedKey, b)
	if err != nil {
		return nil, err
	}
	defer wipe(raw)
	return hd.NewKey(hd.Curve(curve), raw)
}
