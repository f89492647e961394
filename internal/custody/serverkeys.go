package custody

import (
	"bytes"
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
	"slices"
	"sync/atomic"
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

// ServerKeys holds the server identity keys. A key can be rotated (RotateServerKey): its next key
// is published beside it for an overlap period and takes over at a set time, in every process at
// once (each compares the time; Reload brings in a rotation made elsewhere); the old key still
// verifies what it signed for a grace period after.
type ServerKeys struct {
	state atomic.Pointer[map[ServerKey]*keyState]
	// Now is the clock (tests set it); nil is time.Now.
	Now func() time.Time
}

// keyState is one server key: the key in use, a pending next key and when it takes over, and
// retired public keys that still verify until their time runs out. Never changed once built.
type keyState struct {
	cur, next *ecdsa.PrivateKey
	// curHex and nextHex are their public keys as clients are given them (publicHex), made once.
	curHex, nextHex string
	activatesAt     time.Time
	// oldUntil is how long cur still verifies after next took over.
	oldUntil time.Time
	retired  []retiredKey
	// record is the stored record it was read from (sealed keys only, no secret).
	record []byte
}

type retiredKey struct {
	PublicKey   string    `json:"publicKey"`
	RetiredAt   time.Time `json:"retiredAt"`
	VerifyUntil time.Time `json:"verifyUntil"`
	key         *ecdsa.PublicKey
}

type serverKeyRecord struct {
	PublicKey string `json:"publicKey"` // uncompressed, lowercase hex
	Sealed    []byte `json:"sealed"`    // the 32-byte scalar, sealed
	// Next is a rotation: the key that takes over at ActivatesAt.
	Next *nextKeyRecord `json:"next,omitempty"`
	// Retired are earlier keys' public halves, which verify until VerifyUntil.
	Retired []retiredKey `json:"retired,omitempty"`
}

type nextKeyRecord struct {
	PublicKey   string    `json:"publicKey"`
	Sealed      []byte    `json:"sealed"`
	ActivatesAt time.Time `json:"activatesAt"`
	// OldVerifyUntil is how long the replaced key still verifies.
	OldVerifyUntil time.Time `json:"oldVerifyUntil"`
}

// LoadServerKeys loads the server keys from the store, generating and storing any that are
// missing. Concurrent first starts of several processes agree on one set.
func LoadServerKeys(ctx context.Context, st store.Store, kr *Keyring) (*ServerKeys, error) {
	sk := &ServerKeys{}
	return sk, sk.Reload(ctx, st, kr)
}

// Reload reads the server keys again, to pick up a rotation made by another process (serve does
// so periodically; a rotation's overlap is meant to be much longer than that period).
func (s *ServerKeys) Reload(ctx context.Context, st store.Store, kr *Keyring) error {
	var old map[ServerKey]*keyState
	if p := s.state.Load(); p != nil {
		old = *p
	}
	keys := make(map[ServerKey]*keyState, len(AllServerKeys))
	for _, name := range AllServerKeys {
		k, err := loadOrCreateServerKey(ctx, st, kr, name, old[name])
		if err != nil {
			return fmt.Errorf("server key %s: %w", name, err)
		}
		keys[name] = k
	}
	s.state.Store(&keys)
	return nil
}

func (s *ServerKeys) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// inUse is the state's key that signs at now.
func (k *keyState) inUse(now time.Time) *ecdsa.PrivateKey {
	if k.next != nil && !now.Before(k.activatesAt) {
		return k.next
	}
	return k.cur
}

// key returns the named key in use now.
func (s *ServerKeys) key(name ServerKey) *ecdsa.PrivateKey {
	return (*s.state.Load())[name].inUse(s.now())
}

func serverKeyBinding(name ServerKey) Binding { return Binding{Kind: serverKeyKind, ID: string(name)} }

// readServerKey reads a server key's record; when it is the one prev was built from, prev is kept
// (a periodic reload opens no key again and leaves no new copy of one in memory).
func readServerKey(
	ctx context.Context,
	st store.Store,
	kr *Keyring,
	name ServerKey,
	prev *keyState,
) (*keyState, error) {
	rec, err := getServerKeyRecord(ctx, st, name)
	if err != nil {
		return nil, err
	}
	if prev != nil && bytes.Equal(prev.record, rec.Data) {
		return prev, nil
	}
	var sr serverKeyRecord
	if err := json.Unmarshal(rec.Data, &sr); err != nil {
		return nil, errors.New("malformed server key record")
	}
	open := func(sealed []byte) (*ecdsa.PrivateKey, error) {
		scalar, err := kr.Open(sealed, serverKeyBinding(name))
		if err != nil {
			return nil, err
		}
		defer wipe(scalar)
		return ecdsa.ParseRawPrivateKey(elliptic.P256(), scalar)
	}
	k := &keyState{record: rec.Data}
	if k.cur, err = open(sr.Sealed); err != nil {
		return nil, err
	}
	k.curHex = publicHex(&k.cur.PublicKey)
	if sr.Next != nil {
		if k.next, err = open(sr.Next.Sealed); err != nil {
			return nil, err
		}
		k.nextHex = publicHex(&k.next.PublicKey)
		k.activatesAt, k.oldUntil = sr.Next.ActivatesAt, sr.Next.OldVerifyUntil
	}
	for _, r := range sr.Retired {
		b, err := hex.DecodeString(r.PublicKey)
		if err != nil {
			return nil, errors.New("malformed retired server key")
		}
		if r.key, err = ecdsa.ParseUncompressedPublicKey(elliptic.P256(), b); err != nil {
			return nil, errors.New("malformed retired server key")
		}
		k.retired = append(k.retired, r)
	}
	return k, nil
}

// newSealedServerKey makes a P-256 key and seals its scalar for name.
func newSealedServerKey(kr *Keyring, name ServerKey) (pubHex string, sealed []byte, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", nil, err
	}
	scalar, err := k.Bytes()
	if err != nil {
		return "", nil, err
	}
	defer wipe(scalar)
	if sealed, err = kr.Seal(scalar, serverKeyBinding(name)); err != nil {
		return "", nil, err
	}
	pub, _ := k.PublicKey.Bytes()
	return hex.EncodeToString(pub), sealed, nil
}

func loadOrCreateServerKey(
	ctx context.Context,
	st store.Store,
	kr *Keyring,
	name ServerKey,
	prev *keyState,
) (*keyState, error) {
	k, err := readServerKey(ctx, st, kr, name, prev)
	if !errors.Is(err, store.ErrNotFound) {
		return k, err
	}
	pub, sealed, err := newSealedServerKey(kr, name)
	if err != nil {
		return nil, err
	}
	if err := insertServerKeyRecord(ctx, st, name, serverKeyRecord{PublicKey: pub, Sealed: sealed}); err != nil {
		return nil, err
	}
	// Read what was stored (another process's key, if it was first).
	return readServerKey(ctx, st, kr, name, nil)
}

// getServerKeyRecord reads the stored record of the server key (or sponsor key) name.
func getServerKeyRecord(ctx context.Context, st store.Store, name ServerKey) (store.Record, error) {
	var rec store.Record
	err := st.View(ctx, func(r store.Reader) error {
		var err error
		rec, err = r.Get(ctx, serverKeyKind, string(name))
		return err
	})
	return rec, err
}

// insertServerKeyRecord stores a new key's record under name unless one is there already (the
// first of several processes starting at once wins; the others read its key afterwards).
func insertServerKeyRecord(ctx context.Context, st store.Store, name ServerKey, sr serverKeyRecord) error {
	data, err := json.Marshal(sr)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	err = st.Update(ctx, func(tx store.Tx) error {
		return tx.Insert(
			ctx,
			store.Record{Kind: serverKeyKind, ID: string(name), Data: data, CreatedAt: now, UpdatedAt: now},
		)
	})
	if err != nil && !errors.Is(err, store.ErrAlreadyExists) {
		return err
	}
	return nil
}

// PublicKey returns a server key's public half in use now: uncompressed, lowercase hex — exactly
// the string clients pass to @turnkey/crypto's override parameters.
func (s *ServerKeys) PublicKey(name ServerKey) string {
	k := (*s.state.Load())[name]
	if k.inUse(s.now()) == k.next {
		return k.nextHex
	}
	return k.curHex
}

func publicHex(k *ecdsa.PublicKey) string {
	b, _ := k.Bytes()
	return hex.EncodeToString(b)
}

// Public returns a server key's public key in use now.
func (s *ServerKeys) Public(name ServerKey) *ecdsa.PublicKey { return &s.key(name).PublicKey }

// VerifyKeys returns the public keys that verify what the named key signed: the key in use
// first, then a pending next key (another process may have switched a moment earlier), the
// replaced key during its grace period, and retired keys until their time runs out.
func (s *ServerKeys) VerifyKeys(name ServerKey) []*ecdsa.PublicKey {
	k, now := (*s.state.Load())[name], s.now()
	use := k.inUse(now)
	keys := []*ecdsa.PublicKey{&use.PublicKey}
	if k.next != nil && use != k.next {
		keys = append(keys, &k.next.PublicKey)
	}
	if use == k.next && now.Before(k.oldUntil) {
		keys = append(keys, &k.cur.PublicKey)
	}
	for _, r := range k.retired {
		if now.Before(r.VerifyUntil) {
			keys = append(keys, r.key)
		}
	}
	return keys
}

// decryptKeys are the private keys that open what clients encrypted to the named key: the key
// in use, and the other of the current and next keys while a rotation overlaps (clients pin
// either) and during the replaced key's grace period.
func (s *ServerKeys) decryptKeys(name ServerKey) []*ecdsa.PrivateKey {
	k, now := (*s.state.Load())[name], s.now()
	use := k.inUse(now)
	keys := []*ecdsa.PrivateKey{use}
	if k.next != nil && use != k.next {
		keys = append(keys, k.next)
	}
	if use == k.next && now.Before(k.oldUntil) {
		keys = append(keys, k.cur)
	}
	return keys
}

// Rotation is a pending or recent rotation of one server key, as published at
// /.well-known/latchkey.json.
type Rotation struct {
	Key ServerKey `json:"key"`
	// Current is the key in use now, Next the one that takes over at ActivatesAt (empty once it
	// has: then Previous is the replaced key, which verifies until PreviousVerifiesUntil).
	Current               string    `json:"current"`
	Next                  string    `json:"next,omitempty"`
	ActivatesAt           time.Time `json:"activatesAt"`
	Previous              string    `json:"previous,omitempty"`
	PreviousVerifiesUntil time.Time `json:"previousVerifiesUntil,omitzero"`
}

// Rotations lists the keys with a rotation pending, or one that took over less than its grace
// period ago.
func (s *ServerKeys) Rotations() []Rotation {
	state, now := *s.state.Load(), s.now()
	var out []Rotation
	for _, name := range AllServerKeys {
		k := state[name]
		if k.next == nil {
			continue
		}
		r := Rotation{Key: name, ActivatesAt: k.activatesAt.UTC()}
		if now.Before(k.activatesAt) {
			r.Current, r.Next = k.curHex, k.nextHex
		} else if now.Before(k.oldUntil) {
			r.Current, r.Previous, r.PreviousVerifiesUntil = k.nextHex, k.curHex, k.oldUntil.UTC()
		} else {
			continue
		}
		out = append(out, r)
	}
	return out
}

// Rotatable are the server keys RotateServerKey rotates: those clients pin or verify by a
// public key they are given. The webhook and OIDC keys are published as key sets whose key ids
// receivers cache; rotating them is not supported yet.
var Rotatable = []ServerKey{Signer, Notarizer, OTP, AppProof, ClientSecrets}

// RotateServerKey makes a new key for name that takes over at now+overlap; the replaced key
// still verifies for grace after that. A previous rotation that has taken over is folded in
// first (its replaced key joins the retired keys); one still pending is refused. The other
// processes see it at their next Reload.
func RotateServerKey(
	ctx context.Context,
	st store.Store,
	kr *Keyring,
	name ServerKey,
	overlap, grace time.Duration,
	now time.Time,
) (Rotation, error) {
	if !slices.Contains(Rotatable, name) {
		return Rotation{}, fmt.Errorf(
			"rotating the %s key is not supported: it is published in a key set whose ids receivers cache (rotatable: %v)",
			name,
			Rotatable,
		)
	}
	if overlap < 0 || grace < 0 {
		return Rotation{}, errors.New("the overlap and the grace period must not be negative")
	}
	pub, sealed, err := newSealedServerKey(kr, name)
	if err != nil {
		return Rotation{}, err
	}
	var out Rotation
	err = st.Update(ctx, func(tx store.Tx) error {
		rec, err := tx.Get(ctx, serverKeyKind, string(name))
		if err != nil {
			return err
		}
		var sr serverKeyRecord
		if err := json.Unmarshal(rec.Data, &sr); err != nil {
			return errors.New("malformed server key record")
		}
		if n := sr.Next; n != nil {
			if now.Before(n.ActivatesAt) {
				return fmt.Errorf(
					"the %s key already has a rotation pending until %s",
					name,
					n.ActivatesAt.UTC().Format(time.RFC3339),
				)
			}
			sr.Retired = append(
				sr.Retired,
				retiredKey{PublicKey: sr.PublicKey, RetiredAt: n.ActivatesAt, VerifyUntil: n.OldVerifyUntil},
			)
			sr.PublicKey, sr.Sealed, sr.Next = n.PublicKey, n.Sealed, nil
		}
		sr.Retired = slices.DeleteFunc(sr.Retired, func(r retiredKey) bool { return !now.Before(r.VerifyUntil) })
		at := now.Add(overlap).UTC()
		sr.Next = &nextKeyRecord{PublicKey: pub, Sealed: sealed, ActivatesAt: at, OldVerifyUntil: at.Add(grace)}
		out = Rotation{Key: name, Current: sr.PublicKey, Next: pub, ActivatesAt: at}
		if rec.Data, err = json.Marshal(sr); err != nil {
			return err
		}
		rec.UpdatedAt = now.UTC()
		return tx.Put(ctx, rec)
	})
	return out, err
}

// Signer returns a crypto.Signer over the named key in use at the time of each call (ECDSA, DER
// signatures of the digest it is given) for code that signs through the standard interface,
// such as the OIDC issuer. The key itself stays here.
func (s *ServerKeys) Signer(name ServerKey) crypto.Signer { return serverSigner{s, name} }

type serverSigner struct {
	keys *ServerKeys
	name ServerKey
}

func (g serverSigner) Public() crypto.PublicKey { return g.keys.Public(g.name) }
func (g serverSigner) Sign(r io.Reader, digest []byte, _ crypto.SignerOpts) ([]byte, error) {
	return ecdsa.SignASN1(r, g.keys.key(g.name), digest)
}

// SignSHA256DER signs SHA-256(msg) with the named key and returns an ASN.1 DER signature.
func (s *ServerKeys) SignSHA256DER(name ServerKey, msg []byte) ([]byte, error) {
	d := sha256.Sum256(msg)
	return ecdsa.SignASN1(rand.Reader, s.key(name), d[:])
}

// SignDigestRaw signs a 32-byte digest with the named key and returns r‖s (64 bytes), the JWT
// ES256 form.
func (s *ServerKeys) SignDigestRaw(name ServerKey, digest []byte) ([]byte, error) {
	der, err := ecdsa.SignASN1(rand.Reader, s.key(name), digest)
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
