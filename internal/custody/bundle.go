package custody

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/latchkey/latchkey/internal/custody/hd"
)

// Turnkey's signed enclave envelopes (docs/wire.md §3.2): ServerSendMsgV1 for exports,
// ServerTargetMsgV1 for import targets. data is the hex of a JSON payload; dataSignature is a DER
// ECDSA P-256 signature over SHA-256 of that JSON by the signer key, whose uncompressed public
// key is enclaveQuorumPublic.
type envelope struct {
	Version             string `json:"version"`
	Data                string `json:"data"`
	DataSignature       string `json:"dataSignature"`
	EnclaveQuorumPublic string `json:"enclaveQuorumPublic"`
}

func (c *Custodian) signedEnvelope(payload any) (string, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return "", err
	}
	sig, err := c.keys.SignSHA256DER(Signer, data)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(
		envelope{Version: "v1.0.0", Data: hex.EncodeToString(data), DataSignature: hex.EncodeToString(sig),
			EnclaveQuorumPublic: c.keys.PublicKey(Signer)},
	)
	return string(b), err
}

type exportData struct {
	EncappedPublic string `json:"encappedPublic"`
	Ciphertext     string `json:"ciphertext"`
	OrganizationID string `json:"organizationId"`
}

func (c *Custodian) exportBundle(plaintext []byte, targetPublicKey, orgID string) (string, error) {
	target, err := ParseP256PublicKeyHex(targetPublicKey)
	if err != nil {
		return "", fmt.Errorf("targetPublicKey: %w", err)
	}
	enc, ct, err := hpkeSeal(target, plaintext)
	if err != nil {
		return "", err
	}
	return c.signedEnvelope(
		exportData{EncappedPublic: hex.EncodeToString(enc), Ciphertext: hex.EncodeToString(ct), OrganizationID: orgID},
	)
}

// ExportMnemonic encrypts a wallet's mnemonic (in language, a MNEMONIC_LANGUAGE_* value; ""
// keeps English) to targetPublicKey as an export bundle that @turnkey/crypto's
// decryptExportBundle opens given this server's signer key.
func (c *Custodian) ExportMnemonic(
	sealedMnemonic []byte,
	b Binding,
	language, targetPublicKey, orgID string,
) (bundle string, err error) {
	inSecret(func() { bundle, err = c.exportMnemonic(sealedMnemonic, b, language, targetPublicKey, orgID) })
	return bundle, err
}

func (c *Custodian) exportMnemonic(
	sealedMnemonic []byte,
	b Binding,
	language, targetPublicKey, orgID string,
) (string, error) {
	m, err := c.kr.Open(sealedMnemonic, b)
	if err != nil {
		return "", err
	}
	defer wipe(m)
	out := m
	if language != "" && language != string(hd.LanguageEnglish) {
		converted, err := hd.ConvertMnemonicBytes(m, hd.Language(language))
		if err != nil {
			return "", err
		}
		defer wipe(converted)
		out = converted
	}
	return c.exportBundle(out, targetPublicKey, orgID)
}

// ExportKey encrypts a sealed private key's raw bytes (32) to targetPublicKey as an export bundle.
func (c *Custodian) ExportKey(sealedKey []byte, b Binding, targetPublicKey, orgID string) (bundle string, err error) {
	inSecret(func() { bundle, err = c.exportKey(sealedKey, b, targetPublicKey, orgID) })
	return bundle, err
}

func (c *Custodian) exportKey(sealedKey []byte, b Binding, targetPublicKey, orgID string) (string, error) {
	raw, err := c.kr.Open(sealedKey, b)
	if err != nil {
		return "", err
	}
	defer wipe(raw)
	return c.exportBundle(raw, targetPublicKey, orgID)
}

type targetData struct {
	TargetPublic   string `json:"targetPublic"`
	OrganizationID string `json:"organizationId"`
	UserID         string `json:"userId"`
}

// NewImportTarget creates a one-time P-256 key an import is encrypted to. It returns the signed
// import bundle for the client (encryptWalletToBundle / encryptPrivateKeyToBundle read it) and
// the target's private key sealed for b.
func (c *Custodian) NewImportTarget(b Binding, orgID, userID string) (bundle string, sealedTarget []byte, err error) {
	bundle, _, sealedTarget, err = c.NewSecretTarget(orgID, userID, func(string) Binding { return b })
	return bundle, sealedTarget, err
}

// ErrBadImportBundle is returned for an encrypted bundle that is malformed or does not open.
var ErrBadImportBundle = errors.New(
	"encryptedBundle does not open with this user's import target (run init_import again and encrypt to the new bundle)",
)

func (c *Custodian) openImport(encryptedBundle string, sealedTarget []byte, tb Binding) ([]byte, error) {
	var eb struct {
		EncappedPublic string `json:"encappedPublic"`
		Ciphertext     string `json:"ciphertext"`
	}
	if err := json.Unmarshal([]byte(encryptedBundle), &eb); err != nil {
		return nil, fmt.Errorf("encryptedBundle must be the JSON {encappedPublic, ciphertext}: %w", err)
	}
	enc, err1 := hex.DecodeString(eb.EncappedPublic)
	ct, err2 := hex.DecodeString(eb.Ciphertext)
	if err1 != nil || err2 != nil {
		return nil, errors.New("encryptedBundle: encappedPublic and ciphertext must be hex")
	}
	enc, err := P256Uncompressed(enc)
	if err != nil {
		return nil, fmt.Errorf("encryptedBundle.encappedPublic: %w", err)
	}
	scalar, err := c.kr.Open(sealedTarget, tb)
	if err != nil {
		return nil, err
	}
	defer wipe(scalar)
	priv, err := ecdh.P256().NewPrivateKey(scalar)
	if err != nil {
		return nil, err
	}
	plain, err := hpkeOpen(priv, enc, ct)
	if err != nil {
		return nil, ErrBadImportBundle
	}
	return plain, nil
}

// PassphraseSeparator is how Turnkey's import frame appends a wallet passphrase to the mnemonic
// it encrypts (docs/frames.md, "What is not supported").
const PassphraseSeparator = "\n--PASS--\n"

// ErrWalletPassphrase refuses an imported wallet that carries a passphrase: Latchkey derives
// wallets from the mnemonic alone and keeps no passphrase, so importing one would silently give
// other addresses than the user's.
var ErrWalletPassphrase = errors.New(
	"the imported wallet carries a passphrase (Turnkey's \"\\n--PASS--\\n\" separator): wallet passphrases " +
		"are not supported by Latchkey; import the mnemonic alone",
)

// ImportMnemonic opens an imported mnemonic, checks it, and returns it sealed for the wallet.
func (c *Custodian) ImportMnemonic(
	encryptedBundle string,
	sealedTarget []byte,
	tb, wallet Binding,
) (sealed []byte, err error) {
	inSecret(func() { sealed, err = c.importMnemonic(encryptedBundle, sealedTarget, tb, wallet) })
	return sealed, err
}

func (c *Custodian) importMnemonic(encryptedBundle string, sealedTarget []byte, tb, wallet Binding) ([]byte, error) {
	plain, err := c.openImport(encryptedBundle, sealedTarget, tb)
	if err != nil {
		return nil, err
	}
	defer wipe(plain)
	if bytes.Contains(plain, []byte(PassphraseSeparator)) {
		return nil, ErrWalletPassphrase
	}
	m, err := hd.CanonicalMnemonic(plain)
	if err != nil {
		return nil, err
	}
	defer wipe(m)
	return c.kr.Seal(m, wallet)
}

// ImportPrivateKey opens an imported private key (raw bytes) on curve and returns it sealed.
func (c *Custodian) ImportPrivateKey(
	encryptedBundle string,
	sealedTarget []byte,
	tb, key Binding,
	curve string,
) (d DerivedAccount, err error) {
	inSecret(func() { d, err = c.importPrivateKey(encryptedBundle, sealedTarget, tb, key, curve) })
	return d, err
}

func (c *Custodian) importPrivateKey(
	encryptedBundle string,
	sealedTarget []byte,
	tb, key Binding,
	curve string,
) (DerivedAccount, error) {
	plain, err := c.openImport(encryptedBundle, sealedTarget, tb)
	if err != nil {
		return DerivedAccount{}, err
	}
	defer wipe(plain)
	raw := plain
	if curve == string(hd.CurveEd25519) && len(raw) == 64 {
		raw = raw[:32] // seed ‖ public key (Solana's 64-byte form)
	}
	k, err := hd.NewKey(hd.Curve(curve), raw)
	if err != nil {
		return DerivedAccount{}, fmt.Errorf("imported key: %w", err)
	}
	defer k.Wipe()
	return c.sealKey(k, key)
}

// AppProof signs an app proof payload (a JSON string) with the app-proof key. publicKey is the
// 130-byte hex of an encryption public key (the signer's) followed by the signing public key, as
// @turnkey/crypto's verifyAppProofSignature reads it; signature is r‖s over SHA-256(payload).
func (c *Custodian) AppProof(payload []byte) (publicKey, signature string, err error) {
	d := sha256.Sum256(payload)
	sig, err := c.keys.SignDigestRaw(AppProof, d[:])
	if err != nil {
		return "", "", err
	}
	return c.keys.PublicKey(Signer) + c.keys.PublicKey(AppProof), hex.EncodeToString(sig), nil
}

// ---- client side: what a Turnkey SDK does with the bundles (the CLI and tests use these) ----

// OpenExportBundle verifies an export bundle against signerPublicKey (uncompressed hex), checks
// it is for orgID, and decrypts it with the receiver's P-256 private key (hex).
func OpenExportBundle(bundle, receiverPrivateKeyHex, orgID, signerPublicKey string) ([]byte, error) {
	var env envelope
	if err := json.Unmarshal([]byte(bundle), &env); err != nil {
		return nil, fmt.Errorf("export bundle is not JSON: %w", err)
	}
	if env.EnclaveQuorumPublic != signerPublicKey {
		return nil, fmt.Errorf(
			"export bundle signer %s is not the expected %s",
			env.EnclaveQuorumPublic,
			signerPublicKey,
		)
	}
	data, err := verifyEnvelope(env)
	if err != nil {
		return nil, err
	}
	var d exportData
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	if d.OrganizationID != orgID {
		return nil, fmt.Errorf("export bundle is for organization %s, not %s", d.OrganizationID, orgID)
	}
	enc, err1 := hex.DecodeString(d.EncappedPublic)
	ct, err2 := hex.DecodeString(d.Ciphertext)
	if err1 != nil || err2 != nil {
		return nil, errors.New("export bundle: bad hex")
	}
	priv, err := parseP256Private(receiverPrivateKeyHex)
	if err != nil {
		return nil, err
	}
	return hpkeOpen(priv, enc, ct)
}

// SealToImportBundle encrypts plaintext to an import bundle's target after checking its
// signature, organization and user, returning the encryptedBundle JSON.
func SealToImportBundle(importBundle string, plaintext []byte, orgID, userID, signerPublicKey string) (string, error) {
	var env envelope
	if err := json.Unmarshal([]byte(importBundle), &env); err != nil {
		return "", err
	}
	if env.EnclaveQuorumPublic != signerPublicKey {
		return "", errors.New("import bundle signer mismatch")
	}
	data, err := verifyEnvelope(env)
	if err != nil {
		return "", err
	}
	var t targetData
	if err := json.Unmarshal(data, &t); err != nil {
		return "", err
	}
	if t.OrganizationID != orgID || t.UserID != userID {
		return "", errors.New("import bundle is for another organization or user")
	}
	target, err := ParseP256PublicKeyHex(t.TargetPublic)
	if err != nil {
		return "", err
	}
	enc, ct, err := hpkeSeal(target, plaintext)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(
		map[string]string{"encappedPublic": hex.EncodeToString(enc), "ciphertext": hex.EncodeToString(ct)},
	)
	return string(b), err
}

func verifyEnvelope(env envelope) ([]byte, error) {
	data, err := hex.DecodeString(env.Data)
	if err != nil {
		return nil, errors.New("bundle data is not hex")
	}
	sig, err := hex.DecodeString(env.DataSignature)
	if err != nil {
		return nil, errors.New("bundle signature is not hex")
	}
	pub, err := ParseP256PublicKeyHex(env.EnclaveQuorumPublic)
	if err != nil {
		return nil, err
	}
	pk, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), pub)
	if err != nil {
		return nil, err
	}
	d := sha256.Sum256(data)
	if !ecdsa.VerifyASN1(pk, d[:], sig) {
		return nil, errors.New("bundle signature does not verify")
	}
	return data, nil
}
