package custody

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// ServerKey names one of the server's identity keys.
type ServerKey string

// The server identity keys (docs/design.md, "Server identity keys"). All are P-256.
const (
	// Signer signs export bundles and import target bundles (Turnkey's "signer" key,
	// dangerouslyOverrideSignerPublicKey in @turnkey/crypto).
	Signer ServerKey = "signer"
	// Notarizer signs session JWTs.
	Notarizer ServerKey = "notarizer"
	// OTP signs OTP verification tokens and OTP encryption target bundles (Turnkey's TLS
	// fetcher signing key).
	OTP ServerKey = "otp"
	// AppProof signs app proofs.
	AppProof ServerKey = "app_proof"
	// Webhook signs webhook deliveries.
	Webhook ServerKey = "webhook"
	// OIDC signs the id_tokens Latchkey mints after an OAuth 2.0 exchange (oauth2_authenticate).
	OIDC ServerKey = "oidc"
	// ClientSecrets is the key clients encrypt OAuth 2.0 client secrets to (Turnkey's TLS
	// fetcher encryption key: @turnkey/crypto encryptOauth2ClientSecret's override).
	ClientSecrets ServerKey = "client_secrets"
)

// AllServerKeys lists the server keys in a fixed order. A key added here is generated at the
// next start of an existing installation.
var AllServerKeys = []ServerKey{Signer, Notarizer, OTP, AppProof, Webhook, OIDC, ClientSecrets}

const serverKeyKind = "server_key"

// ServerKeys holds the server identity keys, loaded once at start.
type ServerKeys struct {
	priv map[ServerKey]*ecdsa.PrivateKey
	pub  map[ServerKey]string
}

type serverKeyRecord struct {
	PublicKey string `json:"publicKey"` // uncompressed, lowercase hex
	Sealed    []byte `json:"sealed"`    // the 32-byte scalar, sealed
}

// LoadServerKeys loads the server keys from the store, generating and storing any that are
// missing. Concurrent first starts of several processes agree on one set.
func LoadServerKeys(ctx context.Context, st store.Store, kr *Keyring) (*ServerKeys, error) {
	sk := &ServerKeys{priv: map[ServerKey]*ecdsa.PrivateKey{}, pub: map[ServerKey]string{}}
	for _, name := range AllServerKeys {
		k, err := loadOrCreateServerKey(ctx, st, kr, name)
		if err != nil {
			return nil, fmt.Errorf("server key %s: %w", name, err)
		}
		pub, err := k.PublicKey.Bytes()
		if err != nil {
			return nil, err
		}
		sk.priv[name] = k
		sk.pub[name] = hex.EncodeToString(pub)
	}
	return sk, nil
}

func loadOrCreateServerKey(ctx context.Context, st store.Store, kr *Keyring, name ServerKey) (*ecdsa.PrivateKey, error) {
	b := Binding{Kind: serverKeyKind, ID: string(name)}
	read := func() (*ecdsa.PrivateKey, error) {
		var rec store.Record
		err := st.View(ctx, func(r store.Reader) error {
			var err error
			rec, err = r.Get(ctx, serverKeyKind, string(name))
			return err
		})
		if err != nil {
			return nil, err
		}
		var sr serverKeyRecord
		if err := json.Unmarshal(rec.Data, &sr); err != nil {
			return nil, errors.New("malformed server key record")
		}
		scalar, err := kr.Open(sr.Sealed, b)
		if err != nil {
			return nil, err
		}
		defer wipe(scalar)
		return ecdsa.ParseRawPrivateKey(elliptic.P256(), scalar)
	}
	k, err := read()
	if !errors.Is(err, store.ErrNotFound) {
		return k, err
	}
	k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	scalar, err := k.Bytes()
	if err != nil {
		return nil, err
	}
	defer wipe(scalar)
	sealed, err := kr.Seal(scalar, b)
	if err != nil {
		return nil, err
	}
	pub, _ := k.PublicKey.Bytes()
	data, _ := json.Marshal(serverKeyRecord{PublicKey: hex.EncodeToString(pub), Sealed: sealed})
	now := time.Now().UTC()
	err = st.Update(ctx, func(tx store.Tx) error {
		return tx.Insert(ctx, store.Record{Kind: serverKeyKind, ID: string(name), Data: data, CreatedAt: now, UpdatedAt: now})
	})
	if errors.Is(err, store.ErrAlreadyExists) {
		return read()
	}
	return k, err
}

// PublicKey returns a server key's public half: uncompressed, lowercase hex — exactly the string
// clients pass to @turnkey/crypto's override parameters.
func (s *ServerKeys) PublicKey(name ServerKey) string { return s.pub[name] }

// Public returns a server key's public key.
func (s *ServerKeys) Public(name ServerKey) *ecdsa.PublicKey { return &s.priv[name].PublicKey }

// Signer returns a crypto.Signer over the named key (ECDSA, DER signatures of the digest it is
// given) for code that signs through the standard interface, such as the OIDC issuer. The key
// itself stays here.
func (s *ServerKeys) Signer(name ServerKey) crypto.Signer { return serverSigner{s.priv[name]} }

type serverSigner struct{ k *ecdsa.PrivateKey }

func (g serverSigner) Public() crypto.PublicKey { return &g.k.PublicKey }
func (g serverSigner) Sign(r io.Reader, digest []byte, _ crypto.SignerOpts) ([]byte, error) {
	return ecdsa.SignASN1(r, g.k, digest)
}

// SignSHA256DER signs SHA-256(msg) with the named key and returns an ASN.1 DER signature.
func (s *ServerKeys) SignSHA256DER(name ServerKey, msg []byte) ([]byte, error) {
	d := sha256.Sum256(msg)
	return ecdsa.SignASN1(rand.Reader, s.priv[name], d[:])
}

// SignDigestRaw signs a 32-byte digest with the named key and returns r‖s (64 bytes), the JWT
// ES256 form.
func (s *ServerKeys) SignDigestRaw(name ServerKey, digest []byte) ([]byte, error) {
	der, err := ecdsa.SignASN1(rand.Reader, s.priv[name], digest)
	if err != nil {
		return nil, err
	}
	return derToRaw(der)
}

func derToRaw(der []byte) ([]byte, error) {
	var sig struct{ R, S *big.Int }
	if _, err := asn1Unmarshal(der, &sig); err != nil {
		return nil, err
	}
	out := make([]byte, 64)
	sig.R.FillBytes(out[:32])
	sig.S.FillBytes(out[32:])
	return out, nil
}
