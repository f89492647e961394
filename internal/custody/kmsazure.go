package custody

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azkeys"
)

// AzureKV wraps and unwraps the master key with an RSA key in Azure Key Vault (or a Managed
// HSM), by the WrapKey and UnwrapKey operations with RSA-OAEP-256 through the official Go SDK.
// The credentials are the SDK's DefaultAzureCredential chain (AZURE_CLIENT_ID with a secret,
// certificate or federated token, managed identity, the Azure CLI), never Latchkey's flags.
// RSA-OAEP has no additional data: the ciphertext opens only through the key's private half,
// which never leaves the vault. The seal record keeps the key version that wrapped and the
// result, "VERSION:BASE64".
type AzureKV struct {
	// Vault is the vault's URL: https://NAME.vault.azure.net (or a Managed HSM's).
	Vault string
	// Key is the key's name; Version, when set, pins the version that wraps (empty: the
	// current one, recorded with the ciphertext so later starts unwrap with it).
	Key, Version string
}

// azureName is what Key Vault allows in key names and versions.
var azureName = regexp.MustCompile(`^[0-9A-Za-z-]{1,127}$`)

// Type is SealAzureKV.
func (AzureKV) Type() string { return SealAzureKV }

// Locate records the vault and the key's name.
func (a AzureKV) Locate(rec *SealRecord) { rec.Addr, rec.Key = a.Vault, a.Key }

// Check refuses an incomplete Key Vault configuration (no request is made, no credential read).
func (a AzureKV) Check() error {
	u, err := url.Parse(a.Vault)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		strings.Trim(u.Path, "/") != "" {
		return fmt.Errorf("--azurekv-vault %q must be the vault's https URL (https://NAME.vault.azure.net)", a.Vault)
	}
	if a.Key == "" {
		return errors.New("--azurekv-key is required: the name of the vault's RSA key that wraps the master key")
	}
	if !azureName.MatchString(a.Key) {
		return fmt.Errorf("--azurekv-key %q must be the name of the vault's RSA key that wraps the master key", a.Key)
	}
	if a.Version != "" && !azureName.MatchString(a.Version) {
		return fmt.Errorf("--azurekv-key-version %q is not a key version", a.Version)
	}
	return nil
}

// client builds a Key Vault keys client with DefaultAzureCredential. The SDK's challenge
// policy checks that the vault's authentication challenge names a parent domain of the vault.
func (a AzureKV) client() (*azkeys.Client, error) {
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("custody: the Azure credential (DefaultAzureCredential): %w", err)
	}
	c, err := azkeys.NewClient(a.Vault, cred, nil)
	if err != nil {
		return nil, fmt.Errorf("custody: the Key Vault client: %w", err)
	}
	return c, nil
}

// Wrap has Key Vault wrap m with the key (RSA-OAEP-256) and returns "VERSION:BASE64".
func (a AzureKV) Wrap(ctx context.Context, m *MasterKey) (string, error) {
	ctx, cancel := kmsCall(ctx)
	defer cancel()
	c, err := a.client()
	if err != nil {
		return "", err
	}
	pt := make([]byte, MasterKeySize)
	copy(pt, m.k[:])
	defer clear(pt)
	alg := azkeys.EncryptionAlgorithmRSAOAEP256
	out, err := c.WrapKey(ctx, a.Key, a.Version, azkeys.KeyOperationParameters{Algorithm: &alg, Value: pt}, nil)
	if err != nil {
		return "", fmt.Errorf("custody: Key Vault wrapkey with key %q: %w", a.Key, err)
	}
	version := a.Version
	if out.KID != nil && out.KID.Name() == a.Key {
		version = out.KID.Version()
	}
	if len(out.Result) == 0 || !azureName.MatchString(version) {
		return "", errors.New("custody: Key Vault wrapkey answered no result or no key version")
	}
	return version + ":" + base64.StdEncoding.EncodeToString(out.Result), nil
}

// Unwrap has Key Vault unwrap the master key with the key version that wrapped it.
func (a AzureKV) Unwrap(ctx context.Context, ciphertext string) (*MasterKey, error) {
	version, b64, ok := strings.Cut(ciphertext, ":")
	ct, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil || len(ct) == 0 || !azureName.MatchString(version) {
		return nil, errors.New("custody: the azurekv seal record holds no VERSION:BASE64 ciphertext")
	}
	ctx, cancel := kmsCall(ctx)
	defer cancel()
	c, err := a.client()
	if err != nil {
		return nil, err
	}
	alg := azkeys.EncryptionAlgorithmRSAOAEP256
	out, err := c.UnwrapKey(ctx, a.Key, version, azkeys.KeyOperationParameters{Algorithm: &alg, Value: ct}, nil)
	if err != nil {
		return nil, fmt.Errorf("custody: Key Vault unwrapkey with key %q version %s: %w", a.Key, version, err)
	}
	return masterKeyFrom(SealAzureKV, out.Result)
}
