package custody

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// Each cloud seal's Check refuses an incomplete or unsafe configuration before any request, with
// a message naming the flag.
func TestKMSCheck(t *testing.T) {
	const gcpKey = "projects/p/locations/global/keyRings/r/cryptoKeys/k"
	for _, c := range []struct {
		name string
		w    Wrapper
		want string // "" accepts
	}{
		{"aws alias", AWSKMS{KeyID: "alias/latchkey", Region: "eu-west-2"}, ""},
		{"aws key ARN, no region", AWSKMS{KeyID: "arn:aws:kms:eu-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"}, ""},
		{"aws VPC endpoint", AWSKMS{KeyID: "k", Endpoint: "https://vpce-1.kms.eu-west-2.vpce.amazonaws.com"}, ""},
		{"aws emulator on loopback", AWSKMS{KeyID: "k", Endpoint: "http://127.0.0.1:4566"}, ""},
		{"aws no key", AWSKMS{Region: "eu-west-2"}, "--awskms-key-id is required"},
		{"aws key with a space", AWSKMS{KeyID: "alias/a b"}, "--awskms-key-id is required"},
		{"aws remote plain http", AWSKMS{KeyID: "k", Endpoint: "http://kms.example"}, "plain http only towards loopback"},
		{"aws endpoint with credentials", AWSKMS{KeyID: "k", Endpoint: "https://u:p@kms.example"}, "must be an https URL"},
		{"gcp key", GCPKMS{Key: gcpKey}, ""},
		{"gcp no key", GCPKMS{}, "--gcpkms-key is required"},
		{"gcp a version", GCPKMS{Key: gcpKey + "/cryptoKeyVersions/1"}, "must be a CryptoKey's resource name"},
		{"gcp a key ring", GCPKMS{Key: "projects/p/locations/global/keyRings/r"}, "must be a CryptoKey's resource name"},
		{"gcp remote plain http", GCPKMS{Key: gcpKey, Endpoint: "http://kms.example"}, "plain http only towards loopback"},
		{"azure key", AzureKV{Vault: "https://acme.vault.azure.net", Key: "master"}, ""},
		{"azure pinned version", AzureKV{Vault: "https://acme.vault.azure.net/", Key: "master", Version: "0123456789abcdef0123456789abcdef"}, ""},
		{"azure http", AzureKV{Vault: "http://acme.vault.azure.net", Key: "master"}, "must be the vault's https URL"},
		{"azure a key URL", AzureKV{Vault: "https://acme.vault.azure.net/keys/master", Key: "master"}, "must be the vault's https URL"},
		{"azure no key", AzureKV{Vault: "https://acme.vault.azure.net"}, "--azurekv-key is required"},
		{"azure key name with a slash", AzureKV{Vault: "https://acme.vault.azure.net", Key: "master/1"}, "must be the name"},
		{"azure bad version", AzureKV{Vault: "https://acme.vault.azure.net", Key: "master", Version: "v/1"}, "is not a key version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.w.Check()
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
}

// The awskms seal's requests as KMS documents them (recorded exchanges): JSON 1.1 POSTs with
// X-Amz-Target TrentService.Encrypt / TrentService.Decrypt, SigV4 for the configured region,
// the key, base64 bytes and Latchkey's encryption context in the body; answers with the
// documented fields, and a decrypt answer that is not 32 bytes refused.
func TestAWSKMSWire(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "AKIDWIRE", "AWS_SECRET_ACCESS_KEY": "wire-secret", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_KMS": ""} {
		t.Setenv(k, v)
	}
	const arn = "arn:aws:kms:eu-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	// The stub's "ciphertext" is the plaintext reversed; plaintextLen cuts what decrypt answers.
	var plaintextLen atomic.Int32
	plaintextLen.Store(MasterKeySize)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			KeyId, Plaintext, CiphertextBlob string
			EncryptionContext                map[string]string
		}
		body, _ := io.ReadAll(r.Body)
		fail := func(typ, msg string) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
		}
		if r.Method != http.MethodPost || r.URL.Path != "/" ||
			r.Header.Get("Content-Type") != "application/x-amz-json-1.1" ||
			!strings.Contains(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDWIRE/") ||
			!strings.Contains(r.Header.Get("Authorization"), "/eu-west-2/kms/aws4_request") ||
			json.Unmarshal(body, &in) != nil {
			fail("ValidationException", "unexpected request shape")
			return
		}
		if in.KeyId != arn || len(in.EncryptionContext) != 1 || in.EncryptionContext["latchkey"] != "master-key" {
			fail("InvalidCiphertextException", "")
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		switch r.Header.Get("X-Amz-Target") {
		case "TrentService.Encrypt":
			pt, _ := base64.StdEncoding.DecodeString(in.Plaintext)
			stored := make([]byte, len(pt))
			for i := range pt {
				stored[len(pt)-1-i] = pt[i]
			}
			json.NewEncoder(w).
				Encode(map[string]string{"CiphertextBlob": base64.StdEncoding.EncodeToString(stored), "KeyId": arn, "EncryptionAlgorithm": "SYMMETRIC_DEFAULT"})
		case "TrentService.Decrypt":
			blob, _ := base64.StdEncoding.DecodeString(in.CiphertextBlob)
			pt := make([]byte, len(blob))
			for i := range blob {
				pt[len(blob)-1-i] = blob[i]
			}
			json.NewEncoder(w).
				Encode(map[string]string{"Plaintext": base64.StdEncoding.EncodeToString(pt[:min(len(pt), int(plaintextLen.Load()))]), "KeyId": arn, "EncryptionAlgorithm": "SYMMETRIC_DEFAULT"})
		default:
			fail("UnknownOperationException", "")
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	a := AWSKMS{KeyID: arn, Endpoint: srv.URL} // the region comes from the ARN
	m, err := NewMasterKey()
	if err != nil {
		t.Fatal(err)
	}
	ct, err := a.Wrap(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := a.Unwrap(ctx, ct)
	if err != nil || !bytes.Equal(back.k[:], m.k[:]) {
		t.Fatalf("unwrapped %v", err)
	}
	plaintextLen.Store(31)
	if _, err := a.Unwrap(ctx, ct); err == nil || !strings.Contains(err.Error(), "31 bytes, not a master key") {
		t.Fatalf("a short plaintext: %v", err)
	}
	if _, err := (AWSKMS{KeyID: "alias/other", Endpoint: srv.URL, Region: "eu-west-2"}).Unwrap(ctx, ct); err == nil ||
		!strings.Contains(err.Error(), "InvalidCiphertextException") || strings.Contains(err.Error(), "wire-secret") {
		t.Fatalf("another key: %v", err)
	}
	if _, err := a.Unwrap(ctx, "%%%"); err == nil || !strings.Contains(err.Error(), "holds no ciphertext blob") {
		t.Fatalf("a broken seal record: %v", err)
	}
}
