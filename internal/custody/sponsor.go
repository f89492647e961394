package custody

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ethereum/go-ethereum/common"
	"github.com/mr-tron/base58"
	"golang.org/x/crypto/sha3"

	"github.com/latchkey/latchkey/internal/custody/hd"
	"github.com/latchkey/latchkey/internal/store"
)

// The gas station's sponsor keys (docs/gas-station.md, "Operator configuration"). They are stored
// as server key records (kind server_key, sealed under their own binding), not as wallets or
// private keys: no organization owns them, no lookup key names them, and no activity can sign
// with them.
const (
	// sponsorPaymaster is the EVM paymaster: the secp256k1 account that sends sponsored
	// transactions and pays their gas, on every eip155 network.
	sponsorPaymaster ServerKey = "sponsor_evm_paymaster"
	// sponsorFeePayer is the Solana fee payer: the Ed25519 account added as the first signer of
	// sponsored Solana transactions.
	sponsorFeePayer ServerKey = "sponsor_solana_fee_payer"
)

// SponsorKeys are the deployment's gas sponsor keys: one EVM paymaster and one Solana fee payer,
// made on the first start and the same in every process. The private halves stay sealed; each
// signature opens its key for the time of the signature only.
type SponsorKeys struct {
	kr                 *Keyring
	paymasterSealed    []byte
	feePayerSealed     []byte
	paymaster          [20]byte
	feePayer           [32]byte
	paymasterPublicKey []byte // uncompressed SEC1, 65 bytes
}

// LoadSponsorKeys loads the sponsor keys, generating and storing them the first time.
// Concurrent first starts of several processes agree on one pair.
func LoadSponsorKeys(ctx context.Context, st store.Store, kr *Keyring) (*SponsorKeys, error) {
	s := &SponsorKeys{kr: kr}
	pm, err := loadOrCreateSponsorKey(ctx, st, kr, sponsorPaymaster, hd.CurveSecp256k1)
	if err != nil {
		return nil, fmt.Errorf("sponsor key %s: %w", sponsorPaymaster, err)
	}
	fp, err := loadOrCreateSponsorKey(ctx, st, kr, sponsorFeePayer, hd.CurveEd25519)
	if err != nil {
		return nil, fmt.Errorf("sponsor key %s: %w", sponsorFeePayer, err)
	}
	s.paymasterSealed, s.paymasterPublicKey = pm.Sealed, pm.pub
	s.paymaster = ethereumAddress(pm.pub)
	s.feePayerSealed = fp.Sealed
	copy(s.feePayer[:], fp.pub)
	return s, nil
}

// sponsorKey is a sponsor key's stored record, with its public key checked against the sealed
// private key.
type sponsorKey struct {
	serverKeyRecord
	pub []byte
}

func loadOrCreateSponsorKey(
	ctx context.Context,
	st store.Store,
	kr *Keyring,
	name ServerKey,
	curve hd.Curve,
) (*sponsorKey, error) {
	k, err := readSponsorKey(ctx, st, kr, name, curve)
	if !errors.Is(err, store.ErrNotFound) {
		return k, err
	}
	var sr serverKeyRecord
	inSecret(func() { sr, err = newSealedSponsorKey(kr, name, curve) })
	if err != nil {
		return nil, err
	}
	if err := insertServerKeyRecord(ctx, st, name, sr); err != nil {
		return nil, err
	}
	// Read what was stored (another process's key, if it was first).
	return readSponsorKey(ctx, st, kr, name, curve)
}

func newSealedSponsorKey(kr *Keyring, name ServerKey, curve hd.Curve) (serverKeyRecord, error) {
	k, err := hd.GenerateKey(curve)
	if err != nil {
		return serverKeyRecord{}, err
	}
	defer k.Wipe()
	raw := k.PrivateKey()
	defer wipe(raw)
	sealed, err := kr.Seal(raw, serverKeyBinding(name))
	if err != nil {
		return serverKeyRecord{}, err
	}
	return serverKeyRecord{PublicKey: hex.EncodeToString(k.UncompressedPublicKey()), Sealed: sealed}, nil
}

// readSponsorKey reads a sponsor key's record and opens it once, to check that the published
// public key is the sealed key's (a record edited by hand cannot redirect the funds).
func readSponsorKey(
	ctx context.Context,
	st store.Store,
	kr *Keyring,
	name ServerKey,
	curve hd.Curve,
) (*sponsorKey, error) {
	rec, err := getServerKeyRecord(ctx, st, name)
	if err != nil {
		return nil, err
	}
	var k sponsorKey
	if err := json.Unmarshal(rec.Data, &k.serverKeyRecord); err != nil {
		return nil, errors.New("malformed sponsor key record")
	}
	inSecret(func() {
		var key *hd.Key
		if key, err = openSponsorKey(kr, k.Sealed, name, curve); err == nil {
			k.pub = key.UncompressedPublicKey()
			key.Wipe()
		}
	})
	if err != nil {
		return nil, err
	}
	if hex.EncodeToString(k.pub) != k.PublicKey {
		return nil, errors.New("the sponsor key record's public key is not its sealed key's")
	}
	return &k, nil
}

func openSponsorKey(kr *Keyring, sealed []byte, name ServerKey, curve hd.Curve) (*hd.Key, error) {
	raw, err := kr.Open(sealed, serverKeyBinding(name))
	if err != nil {
		return nil, err
	}
	defer wipe(raw)
	return hd.NewKey(curve, raw)
}

// ethereumAddress is the last 20 bytes of Keccak-256 of an uncompressed public key's X‖Y.
func ethereumAddress(uncompressed []byte) [20]byte {
	h := sha3.NewLegacyKeccak256()
	h.Write(uncompressed[1:])
	var a [20]byte
	copy(a[:], h.Sum(nil)[12:])
	return a
}

// PaymasterAddress is the Ethereum address of the paymaster (the account the operator funds on
// every sponsored eip155 network).
func (s *SponsorKeys) PaymasterAddress() [20]byte { return s.paymaster }

// PaymasterPublicKey is the paymaster's uncompressed SEC1 public key (65 bytes).
func (s *SponsorKeys) PaymasterPublicKey() []byte {
	return append([]byte(nil), s.paymasterPublicKey...)
}

// SignPaymasterDigest signs a 32-byte digest (a transaction's signing hash) with the paymaster
// key: r‖s‖v, with s in the lower half of the curve order and v the recovery id, 0 or 1.
func (s *SponsorKeys) SignPaymasterDigest(digest [32]byte) (out [65]byte, err error) {
	inSecret(func() {
		var k *hd.Key
		if k, err = openSponsorKey(s.kr, s.paymasterSealed, sponsorPaymaster, hd.CurveSecp256k1); err != nil {
			return
		}
		defer k.Wipe()
		var sig hd.ECDSASignature
		if sig, err = k.SignECDSA(digest[:]); err != nil {
			return
		}
		copy(out[:32], sig.R[:])
		copy(out[32:64], sig.S[:])
		out[64] = sig.V
	})
	return out, err
}

// FeePayerPublicKey is the Solana fee payer's Ed25519 public key (its base58 form is its address).
func (s *SponsorKeys) FeePayerPublicKey() [32]byte { return s.feePayer }

// SignFeePayer signs a Solana message (the serialized message bytes) with the fee payer key.
func (s *SponsorKeys) SignFeePayer(message []byte) (out [64]byte, err error) {
	inSecret(func() {
		var k *hd.Key
		if k, err = openSponsorKey(s.kr, s.feePayerSealed, sponsorFeePayer, hd.CurveEd25519); err != nil {
			return
		}
		defer k.Wipe()
		var sig []byte
		if sig, err = k.SignEd25519(message); err != nil {
			return
		}
		copy(out[:], sig)
	})
	return out, err
}

// String names the sponsor keys by their public addresses only (so a log or error that prints
// the value shows nothing sealed).
func (s *SponsorKeys) String() string {
	a := s.Addresses()
	return fmt.Sprintf("sponsor keys (paymaster %s, fee payer %s)", a.EVMPaymaster, a.SolanaFeePayer)
}

// GoString is String: %#v shows no field.
func (s *SponsorKeys) GoString() string { return s.String() }

// LogValue is what log/slog records for the sponsor keys: the public halves only.
func (s *SponsorKeys) LogValue() slog.Value {
	a := s.Addresses()
	return slog.GroupValue(slog.String("paymaster", a.EVMPaymaster), slog.String("feePayer", a.SolanaFeePayer))
}

// SponsorAddresses are the sponsor keys' addresses as the operator funds them (`latchkey
// gas-station show`, the start-up log, the health page).
type SponsorAddresses struct {
	// EVMPaymaster is the paymaster's EIP-55 address, the same on every eip155 network.
	EVMPaymaster string `json:"evmPaymaster"`
	// SolanaFeePayer is the fee payer's base58 address.
	SolanaFeePayer string `json:"solanaFeePayer"`
}

// Addresses returns the sponsor keys' addresses.
func (s *SponsorKeys) Addresses() SponsorAddresses {
	return SponsorAddresses{
		EVMPaymaster:   common.Address(s.paymaster).Hex(),
		SolanaFeePayer: base58.Encode(s.feePayer[:]),
	}
}
