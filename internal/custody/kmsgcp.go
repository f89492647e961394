package custody

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"regexp"

	kmsapi "cloud.google.com/go/kms/apiv1"
	"cloud.google.com/go/kms/apiv1/kmspb"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// GCPKMS wraps and unwraps the master key with a Cloud KMS symmetric key (purpose
// ENCRYPT_DECRYPT), by the Encrypt and Decrypt methods through the official Go client over its
// REST transport, with the additional authenticated data "latchkey=master-key" and the CRC32C
// integrity checks Google documents for both directions. The credentials are Application
// Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's ADC file, workload identity,
// the metadata server), never Latchkey's flags. The seal record keeps the ciphertext, base64.
type GCPKMS struct {
	// Key is the CryptoKey's resource name:
	// projects/PROJECT/locations/LOCATION/keyRings/RING/cryptoKeys/KEY.
	Key string
	// Endpoint, when set, replaces https://cloudkms.googleapis.com (a Private Service Connect
	// endpoint, a test server).
	Endpoint string
}

// gcpKeyName is a CryptoKey's resource name (not a version: Decrypt takes the key).
var gcpKeyName = regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$`)

// Type is SealGCPKMS.
func (GCPKMS) Type() string { return SealGCPKMS }

// Locate records the key's resource name and the endpoint it was reached at.
func (g GCPKMS) Locate(rec *SealRecord) {
	rec.Key, rec.Addr = g.Key, g.Endpoint
	if rec.Addr == "" {
		rec.Addr = "cloudkms.googleapis.com"
	}
}

// Check refuses an incomplete Cloud KMS configuration (no request is made, no credential read).
func (g GCPKMS) Check() error {
	if g.Key == "" {
		return errors.New(
			"--gcpkms-key is required: the resource name of the Cloud KMS key that wraps the master key (projects/PROJECT/locations/LOCATION/keyRings/RING/cryptoKeys/KEY)",
		)
	}
	if !gcpKeyName.MatchString(g.Key) {
		return fmt.Errorf(
			"--gcpkms-key %q must be a CryptoKey's resource name: projects/PROJECT/locations/LOCATION/keyRings/RING/cryptoKeys/KEY",
			g.Key,
		)
	}
	if g.Endpoint != "" {
		return checkEndpoint("--gcpkms-endpoint", g.Endpoint)
	}
	return nil
}

// client builds a REST client with Application Default Credentials. Its logger is silenced: the
// client's debug logging (GOOGLE_SDK_GO_LOGGING_LEVEL) would print request bodies, and an
// encrypt request holds the master key.
func (g GCPKMS) client(ctx context.Context) (*kmsapi.KeyManagementClient, error) {
	opts := []option.ClientOption{option.WithLogger(slog.New(slog.DiscardHandler))}
	if g.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(g.Endpoint))
	}
	c, err := kmsapi.NewKeyManagementRESTClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("custody: the Cloud KMS client (Application Default Credentials): %w", err)
	}
	return c, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) *wrapperspb.Int64Value {
	return wrapperspb.Int64(int64(crc32.Checksum(b, castagnoli)))
}

func gcpAAD() []byte { return []byte(kmsContextKey + "=" + kmsContextValue) }

// Wrap has Cloud KMS encrypt m under the key's primary version and returns the ciphertext, base64.
func (g GCPKMS) Wrap(ctx context.Context, m *MasterKey) (string, error) {
	ctx, cancel := kmsCall(ctx)
	defer cancel()
	c, err := g.client(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	pt := make([]byte, MasterKeySize)
	copy(pt, m.k[:])
	defer clear(pt)
	aad := gcpAAD()
	out, err := c.Encrypt(ctx, &kmspb.EncryptRequest{Name: g.Key, Plaintext: pt, PlaintextCrc32C: crc32c(pt),
		AdditionalAuthenticatedData: aad, AdditionalAuthenticatedDataCrc32C: crc32c(aad)})
	if err != nil {
		return "", fmt.Errorf("custody: Cloud KMS encrypt with key %q: %w", g.Key, err)
	}
	if !out.GetVerifiedPlaintextCrc32C() || !out.GetVerifiedAdditionalAuthenticatedDataCrc32C() ||
		len(
			out.GetCiphertext(),
		) == 0 || out.GetCiphertextCrc32C().GetValue() != crc32c(out.GetCiphertext()).GetValue() {
		return "", errors.New("custody: Cloud KMS encrypt: the request or the answer was corrupted in transit (CRC32C)")
	}
	return base64.StdEncoding.EncodeToString(out.GetCiphertext()), nil
}

// Unwrap has Cloud KMS decrypt the wrapped master key (the key's version is read from the
// ciphertext by KMS; another key's ciphertext does not decrypt).
func (g GCPKMS) Unwrap(ctx context.Context, ciphertext string) (*MasterKey, error) {
	ct, err := base64.StdEncoding.DecodeString(ciphertext)
	if err != nil || len(ct) == 0 {
		return nil, errors.New("custody: the gcpkms seal record holds no ciphertext")
	}
	ctx, cancel := kmsCall(ctx)
	defer cancel()
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	aad := gcpAAD()
	out, err := c.Decrypt(ctx, &kmspb.DecryptRequest{Name: g.Key, Ciphertext: ct, CiphertextCrc32C: crc32c(ct),
		AdditionalAuthenticatedData: aad, AdditionalAuthenticatedDataCrc32C: crc32c(aad)})
	if err != nil {
		return nil, fmt.Errorf("custody: Cloud KMS decrypt with key %q: %w", g.Key, err)
	}
	pt := out.GetPlaintext()
	if out.GetPlaintextCrc32C().GetValue() != crc32c(pt).GetValue() {
		clear(pt)
		return nil, errors.New("custody: Cloud KMS decrypt: the answer was corrupted in transit (CRC32C)")
	}
	return masterKeyFrom(SealGCPKMS, pt)
}
