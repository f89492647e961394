package custody

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// MaxSecretBytes bounds an imported secret's plaintext.
const MaxSecretBytes = 64 << 10

// NewSecretTarget creates a one-time P-256 key one imported secret is encrypted to (the
// ServerTargetMsgV1 of "enclave encrypt v1": the same signed envelope as an import bundle). bind
// names the binding the target's private key is sealed under, given the target's public key
// (uncompressed lowercase hex), which is how import_secrets finds it again.
func (c *Custodian) NewSecretTarget(
	orgID, userID string,
	bind func(targetPublic string) Binding,
) (bundle, targetPublic string, sealed []byte, err error) {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return "", "", nil, err
	}
	scalar := k.Bytes()
	defer wipe(scalar)
	targetPublic = hex.EncodeToString(k.PublicKey().Bytes())
	if sealed, err = c.kr.Seal(scalar, bind(targetPublic)); err != nil {
		return "", "", nil, err
	}
	bundle, err = c.signedEnvelope(targetData{TargetPublic: targetPublic, OrganizationID: orgID, UserID: userID})
	return bundle, targetPublic, sealed, err
}

// ImportSecret opens a secret encrypted to a secret target (a ClientSendMsg: the JSON
// {encappedPublic, ciphertext}) and returns it sealed for secret. Any bytes up to
// MaxSecretBytes are a secret.
func (c *Custodian) ImportSecret(
	encryptedPayload string,
	sealedTarget []byte,
	tb, secret Binding,
) (sealed []byte, err error) {
	inSecret(func() { sealed, err = c.importSecret(encryptedPayload, sealedTarget, tb, secret) })
	return sealed, err
}

func (c *Custodian) importSecret(encryptedPayload string, sealedTarget []byte, tb, secret Binding) ([]byte, error) {
	plain, err := c.openImport(encryptedPayload, sealedTarget, tb)
	if err != nil {
		return nil, err
	}
	defer wipe(plain)
	if len(plain) == 0 || len(plain) > MaxSecretBytes {
		return nil, fmt.Errorf("a secret must be 1 to %d bytes, got %d", MaxSecretBytes, len(plain))
	}
	return c.kr.Seal(plain, secret)
}

// ExportSecret encrypts a sealed secret to targetPublicKey as a ServerSendMsgV1 (the export
// bundle envelope), which decryptExportBundle opens.
func (c *Custodian) ExportSecret(sealed []byte, b Binding, targetPublicKey, orgID string) (string, error) {
	return c.ExportKey(sealed, b, targetPublicKey, orgID)
}
