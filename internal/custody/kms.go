package custody

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"
)

// The cloud KMS seals: the master key wrapped by a key that never leaves a cloud provider's key
// management service (docs/operations.md, "Production custody"). Each implements Wrapper through
// the provider's official Go SDK; the credentials come from that SDK's own chain (environment,
// workload identity, instance metadata), never from Latchkey's flags.
const (
	SealAWSKMS  = "awskms"
	SealGCPKMS  = "gcpkms"
	SealAzureKV = "azurekv"
)

// kmsTimeout bounds one wrap or unwrap call, retries included: a start that cannot reach the KMS
// fails with the provider's error instead of hanging.
const kmsTimeout = 30 * time.Second

// kmsContext is the context (AWS's encryption context, GCP's additional authenticated data)
// that binds a ciphertext to Latchkey's seal: the KMS refuses to decrypt it without the same
// context, so a ciphertext made by Latchkey does not open as anything else, and nothing else's
// ciphertext opens as Latchkey's master key. It is no secret (the KMS logs it).
const (
	kmsContextKey   = "latchkey"
	kmsContextValue = "master-key"
)

// checkEndpoint refuses a wrapping seal's server URL (--transit-addr, a KMS endpoint override)
// that is not an http(s) URL, or plain http towards anything but loopback (emulators and tests).
func checkEndpoint(flag, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.RawQuery != "" ||
		u.Fragment != "" ||
		u.User != nil {
		return fmt.Errorf("%s %q must be an https URL", flag, raw)
	}
	if u.Scheme == "http" {
		if ip := net.ParseIP(u.Hostname()); !(u.Hostname() == "localhost" || ip != nil && ip.IsLoopback()) {
			return fmt.Errorf("%s %q: plain http only towards loopback; use https", flag, raw)
		}
	}
	return nil
}

// masterKeyFrom copies a wrapping seal's decrypted plaintext (transit, a KMS) into a new master
// key and clears the plaintext; anything but MasterKeySize bytes is refused (without echoing it).
func masterKeyFrom(seal string, plaintext []byte) (*MasterKey, error) {
	defer clear(plaintext)
	if len(plaintext) != MasterKeySize {
		return nil, fmt.Errorf("custody: %s decrypt answered %d bytes, not a master key", seal, len(plaintext))
	}
	m := newMasterKey()
	copy(m.k[:], plaintext)
	return m, nil
}

// kmsCall bounds ctx by kmsTimeout.
func kmsCall(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, kmsTimeout)
}
