package ethereum

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/latchkey/latchkey/internal/chain/address"
)

// RecoverableSigner signs a 32-byte digest with secp256k1 and returns r, s (32 bytes each,
// big-endian, low-S) and the recovery id v (0 or 1). It is the only way this package signs:
// the key stays with the caller.
type RecoverableSigner func(digest [32]byte) (r, s [32]byte, v byte, err error)

// ErrInvalidTransaction wraps every parse error of ParseUnsigned.
var ErrInvalidTransaction = errors.New("invalid ethereum transaction")

// MaxTransactionSize bounds the unsigned transaction ParseUnsigned reads (docs/limits.md §4.2):
// nodes neither pool nor relay a larger one (go-ethereum's and reth's transaction pools refuse
// a transaction over 128 KiB), and Latchkey broadcasts none larger. Within it, parsing,
// hashing, the policy view and signing cost a few times the transaction's size: RLP lengths
// are checked against the input before anything is allocated for them, and a nested list
// where a value belongs is refused at its first byte.
const MaxTransactionSize = 128 << 10

// Policy names of the transaction types (eth.tx.type).
const (
	TypeLegacy = "LEGACY"
	Type1      = "TYPE_1"
	Type2      = "TYPE_2"
	Type3      = "TYPE_3"
	Type4      = "TYPE_4"
)

// unsignedFields is the number of RLP list items of each typed transaction's unsigned form
// (EIP-2930, EIP-1559, EIP-4844 body, EIP-7702); the signed form has three more.
var unsignedFields = map[byte]int{
	types.AccessListTxType: 8,
	types.DynamicFeeTxType: 9,
	types.BlobTxType:       11,
	types.SetCodeTxType:    10,
}

// Tx is one parsed unsigned Ethereum transaction.
type Tx struct {
	tx      *types.Transaction // signature values zero
	chainID *big.Int           // nil for a pre-EIP-155 legacy transaction
	signer  types.Signer
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidTransaction, fmt.Sprintf(format, a...))
}

// ParseUnsigned parses the bytes of an unsigned serialized transaction: legacy RLP (EIP-155
// form with chainId, 0, 0, or the six-field pre-EIP-155 form), or an EIP-2718 typed
// transaction of type 1 (EIP-2930), 2 (EIP-1559), 3 (EIP-4844 payload body only) or 4
// (EIP-7702). Signed transactions, the EIP-4844 network wrapper and trailing bytes are
// rejected.
func ParseUnsigned(b []byte) (*Tx, error) {
	if len(b) == 0 {
		return nil, invalid("empty transaction")
	}
	if len(b) > MaxTransactionSize {
		return nil, invalid("the transaction is %d bytes; nodes relay at most %d", len(b), MaxTransactionSize)
	}
	switch {
	case b[0] >= 0xc0:
		return parseLegacy(b)
	case b[0] >= 0x80:
		return nil, invalid(
			"starts with an RLP string (0x%02x): neither a legacy list nor a transaction type byte",
			b[0],
		)
	}
	typ := b[0]
	want, ok := unsignedFields[typ]
	if !ok {
		return nil, invalid("unsupported transaction type 0x%02x", typ)
	}
	content, err := listContent(b[1:])
	if err != nil {
		return nil, invalid("type %d: %v", typ, err)
	}
	if typ == types.BlobTxType {
		if k, _, _, err := rlp.Split(content); err == nil && k == rlp.List {
			return nil, invalid(
				"type 3: this is the EIP-4844 network wrapper (transaction, blobs, commitments, proofs); send the transaction payload body without blobs",
			)
		}
	}
	n, err := rlp.CountValues(content)
	if err != nil {
		return nil, invalid("type %d: %v", typ, err)
	}
	switch {
	case n == want+3:
		return nil, invalid("type %d: has %d fields, the signed form: send the unsigned transaction", typ, n)
	case n != want:
		return nil, invalid("type %d: has %d fields, the unsigned form has %d", typ, n, want)
	}
	// Decode into go-ethereum's own structures by appending empty v, r, s.
	withSig := wrapList(append(append([]byte{}, content...), 0x80, 0x80, 0x80))
	var inner types.TxData
	switch typ {
	case types.AccessListTxType:
		inner = new(types.AccessListTx)
	case types.DynamicFeeTxType:
		inner = new(types.DynamicFeeTx)
	case types.BlobTxType:
		inner = new(types.BlobTx)
	case types.SetCodeTxType:
		inner = new(types.SetCodeTx)
	}
	if err := rlp.DecodeBytes(withSig, inner); err != nil {
		return nil, invalid("type %d: %v", typ, err)
	}
	tx := types.NewTx(inner)
	chainID := tx.ChainId()
	if chainID.Sign() == 0 {
		// A typed transaction always names its chain (EIP-2718/155); go-ethereum's signer for it
		// refuses chain id 0 with a panic, found by FuzzParseUnsigned.
		return nil, invalid("type %d: chainId is 0: a typed transaction names its chain", typ)
	}
	return &Tx{tx: tx, chainID: chainID, signer: types.LatestSignerForChainID(chainID)}, nil
}

func parseLegacy(b []byte) (*Tx, error) {
	content, err := listContent(b)
	if err != nil {
		return nil, invalid("legacy: %v", err)
	}
	n, err := rlp.CountValues(content)
	if err != nil {
		return nil, invalid("legacy: %v", err)
	}
	inner := new(types.LegacyTx)
	switch n {
	case 6:
		if err := rlp.DecodeBytes(wrapList(append(append([]byte{}, content...), 0x80, 0x80, 0x80)), inner); err != nil {
			return nil, invalid("legacy: %v", err)
		}
		return &Tx{tx: types.NewTx(inner), signer: types.HomesteadSigner{}}, nil
	case 9:
		if err := rlp.DecodeBytes(b, inner); err != nil {
			return nil, invalid("legacy: %v", err)
		}
		if inner.R.Sign() != 0 || inner.S.Sign() != 0 {
			return nil, invalid("legacy: r and s are set: this is a signed transaction, send the unsigned one")
		}
		if inner.V.Sign() == 0 {
			return nil, invalid("legacy: EIP-155 form with chain id 0")
		}
		chainID := new(big.Int).Set(inner.V)
		inner.V = new(big.Int)
		return &Tx{tx: types.NewTx(inner), chainID: chainID, signer: types.NewEIP155Signer(chainID)}, nil
	default:
		return nil, invalid("legacy: has %d fields, the unsigned form has 6 (pre-EIP-155) or 9 (EIP-155)", n)
	}
}

// listContent returns the payload of the single RLP list that must make up all of b.
func listContent(b []byte) ([]byte, error) {
	k, content, rest, err := rlp.Split(b)
	if err != nil {
		return nil, err
	}
	if k != rlp.List {
		return nil, errors.New("not an RLP list")
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%d trailing bytes after the transaction", len(rest))
	}
	return content, nil
}

func wrapList(content []byte) []byte {
	var buf bytes.Buffer
	n := len(content)
	if n < 56 {
		buf.WriteByte(0xc0 + byte(n))
	} else {
		l := big.NewInt(int64(n)).Bytes()
		buf.WriteByte(0xf7 + byte(len(l)))
		buf.Write(l)
	}
	buf.Write(content)
	return buf.Bytes()
}

// Type is the transaction's EIP-2718 type byte (0 for legacy).
func (t *Tx) Type() byte { return t.tx.Type() }

// ChainID is the transaction's chain id, nil for a pre-EIP-155 legacy transaction.
func (t *Tx) ChainID() *big.Int {
	if t.chainID == nil {
		return nil
	}
	return new(big.Int).Set(t.chainID)
}

// SigningHash is the digest the sender signs: keccak256 of the unsigned serialization
// (for EIP-155 legacy, with chainId, 0, 0).
func (t *Tx) SigningHash() [32]byte { return t.signer.Hash(t.tx) }

// Sign signs the transaction with sign and returns the signed serialization, ready for
// eth_sendRawTransaction: legacy with v = recid+35+2*chainId (EIP-155) or 27/28, typed
// transactions with y_parity.
func (t *Tx) Sign(sign RecoverableSigner) ([]byte, error) {
	r, s, v, err := sign(t.SigningHash())
	if err != nil {
		return nil, err
	}
	sig, err := checkSignature(r, s, v)
	if err != nil {
		return nil, err
	}
	signed, err := t.tx.WithSignature(t.signer, sig)
	if err != nil {
		return nil, err
	}
	return signed.MarshalBinary()
}

var halfOrder = new(big.Int).Rsh(secp256k1.S256().N, 1)

// checkSignature validates a signer's output and returns it as r ‖ s ‖ v.
func checkSignature(r, s [32]byte, v byte) ([]byte, error) {
	if v > 1 {
		return nil, fmt.Errorf("signer returned recovery id %d, want 0 or 1", v)
	}
	rb, sb := new(big.Int).SetBytes(r[:]), new(big.Int).SetBytes(s[:])
	if rb.Sign() == 0 || sb.Sign() == 0 || rb.Cmp(secp256k1.S256().N) >= 0 {
		return nil, errors.New("signer returned an invalid signature")
	}
	if sb.Cmp(halfOrder) > 0 {
		return nil, errors.New("signer returned a high-S signature")
	}
	sig := make([]byte, 65)
	copy(sig, r[:])
	copy(sig[32:], s[:])
	sig[64] = v
	return sig, nil
}

// PolicyView is the eth.tx value the policy engine reads. from is the signer's address (the
// unsigned transaction does not carry it). Numbers are *big.Int, addresses and data
// lowercase 0x-hex. For types 2, 3 and 4 gas_price is max_fee_per_gas, as Turnkey documents;
// fee fields a type does not have are absent; to is "" for contract creation.
func (t *Tx) PolicyView(from string) map[string]any {
	tx := t.tx
	to := ""
	if a := tx.To(); a != nil {
		to = lowerAddress(*a)
	}
	chainID := t.ChainID()
	if chainID == nil {
		chainID = new(big.Int)
	}
	view := map[string]any{
		"from":      strings.ToLower(from),
		"to":        to,
		"data":      "0x" + hex.EncodeToString(tx.Data()),
		"value":     new(big.Int).Set(tx.Value()),
		"gas":       new(big.Int).SetUint64(tx.Gas()),
		"gas_price": new(big.Int).Set(tx.GasFeeCap()),
		"chain_id":  chainID,
		"nonce":     new(big.Int).SetUint64(tx.Nonce()),
	}
	switch tx.Type() {
	case types.LegacyTxType:
		view["type"] = TypeLegacy
	case types.AccessListTxType:
		view["type"] = Type1
	case types.DynamicFeeTxType:
		view["type"] = Type2
	case types.BlobTxType:
		view["type"] = Type3
	case types.SetCodeTxType:
		view["type"] = Type4
	}
	if tx.Type() >= types.DynamicFeeTxType {
		view["max_fee_per_gas"] = new(big.Int).Set(tx.GasFeeCap())
		view["max_priority_fee_per_gas"] = new(big.Int).Set(tx.GasTipCap())
	}
	if tx.Type() == types.BlobTxType {
		view["max_fee_per_blob_gas"] = new(big.Int).Set(tx.BlobGasFeeCap())
	}
	return view
}

func lowerAddress(a common.Address) string { return "0x" + hex.EncodeToString(a[:]) }

// Address returns the EIP-55 checksummed address of a secp256k1 public key (65-byte
// uncompressed or 33-byte compressed SEC1).
func Address(pubKey []byte) (string, error) {
	return address.Derive("ADDRESS_FORMAT_ETHEREUM", address.CurveSecp256k1, pubKey)
}
