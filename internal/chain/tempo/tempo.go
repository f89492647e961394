package tempo

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
)

// TxType is the EIP-2718 type byte of a Tempo transaction.
const TxType = 0x76

// feePayerMarker stands in the fee payer field while a sponsored transaction awaits the
// fee payer's signature (the sender does not commit to fee_token then).
const feePayerMarker = 0x00

// RecoverableSigner signs a 32-byte digest with secp256k1 and returns r, s (32 bytes each,
// big-endian, low-S) and the recovery id v (0 or 1). It has the same shape as
// ethereum.RecoverableSigner.
type RecoverableSigner func(digest [32]byte) (r, s [32]byte, v byte, err error)

// ErrInvalidTransaction wraps every parse error of ParseUnsigned.
var ErrInvalidTransaction = errors.New("invalid tempo transaction")

// MaxTransactionSize bounds the unsigned transaction ParseUnsigned reads (docs/limits.md
// §4.2): Tempo's node, built on reth, pools no transaction over 128 KiB. Within it the parse
// is linear: RLP lengths are checked against the input first, and the list's items are
// counted only up to the most a transaction has.
const MaxTransactionSize = 128 << 10

// Call is one call of a Tempo batch.
type Call struct {
	To    []byte // empty for contract creation, else 20 bytes
	Value *big.Int
	Data  []byte
}

// fields are the RLP list items of an unsigned Tempo transaction, in order.
type fields struct {
	ChainID              uint64
	MaxPriorityFeePerGas *big.Int
	MaxFeePerGas         *big.Int
	Gas                  uint64
	Calls                []Call
	AccessList           types.AccessList
	NonceKey             *big.Int
	Nonce                uint64
	ValidBefore          uint64
	ValidAfter           uint64
	FeeToken             []byte
	FeePayer             rlp.RawValue
	AuthorizationList    rlp.RawValue
	Rest                 []rlp.RawValue `rlp:"tail"`
}

// Tx is one parsed unsigned Tempo (0x76) transaction.
type Tx struct {
	f     fields
	items [][]byte // the raw encoding of each list item, as received
	raw   []byte
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidTransaction, fmt.Sprintf(format, a...))
}

// ParseUnsigned parses an unsigned Tempo transaction: 0x76 ‖ rlp([chain_id,
// max_priority_fee_per_gas, max_fee_per_gas, gas_limit, calls[[to, value, input]],
// access_list, nonce_key, nonce, valid_before, valid_after, fee_token,
// fee_payer_signature, authorization_list, key_authorization?]). A signed transaction, the
// 0x78 fee-payer envelope and trailing bytes are rejected.
func ParseUnsigned(b []byte) (*Tx, error) {
	if len(b) == 0 {
		return nil, invalid("empty transaction")
	}
	if b[0] == 0x78 {
		return nil, invalid("0x78 is the fee payer's envelope; send the sender's 0x76 transaction")
	}
	if b[0] != TxType {
		return nil, invalid("type byte 0x%02x, want 0x76", b[0])
	}
	if len(b) > MaxTransactionSize {
		return nil, invalid("the transaction is %d bytes; Tempo's node pools at most %d", len(b), MaxTransactionSize)
	}
	k, content, rest, err := rlp.Split(b[1:])
	switch {
	case err != nil:
		return nil, invalid("%v", err)
	case k != rlp.List:
		return nil, invalid("not an RLP list after the type byte")
	case len(rest) != 0:
		return nil, invalid("%d trailing bytes after the transaction", len(rest))
	}
	var items [][]byte // at most 15 kept: more is an error, counted without a slice entry each
	n := 0
	for c := content; len(c) > 0; n++ {
		_, _, r, err := rlp.Split(c)
		if err != nil {
			return nil, invalid("%v", err)
		}
		if n < 15 {
			items = append(items, c[:len(c)-len(r)])
		}
		c = r
	}
	switch {
	case n < 13 || n > 15:
		return nil, invalid("has %d fields, the unsigned form has 13 (14 with a key authorization)", n)
	case n == 15 || (n == 14 && items[13][0] < 0xc0):
		return nil, invalid("carries a signature: send the unsigned transaction")
	}
	t := &Tx{items: items, raw: append([]byte(nil), b...)}
	if err := rlp.DecodeBytes(b[1:], &t.f); err != nil {
		return nil, invalid("%v", err)
	}
	f := &t.f
	for name, x := range map[string]*big.Int{"max_priority_fee_per_gas": f.MaxPriorityFeePerGas, "max_fee_per_gas": f.MaxFeePerGas, "nonce_key": f.NonceKey} {
		if x.BitLen() > 256 {
			return nil, invalid("%s exceeds 256 bits", name)
		}
	}
	if len(f.Calls) == 0 {
		return nil, invalid("calls is empty")
	}
	for i, c := range f.Calls {
		if len(c.To) != 0 && len(c.To) != 20 {
			return nil, invalid("calls[%d].to is %d bytes, want 20 or empty", i, len(c.To))
		}
		if c.Value.BitLen() > 256 {
			return nil, invalid("calls[%d].value exceeds 256 bits", i)
		}
	}
	if len(f.FeeToken) != 0 && len(f.FeeToken) != 20 {
		return nil, invalid("fee_token is %d bytes, want 20 or empty", len(f.FeeToken))
	}
	fk, fc, _, _ := rlp.Split(f.FeePayer)
	switch {
	case fk == rlp.List: // the fee payer has signed already
	case fk == rlp.Byte && f.FeePayer[0] == feePayerMarker:
	case fk == rlp.String && len(fc) == 0:
	case len(fc) == 20:
		return nil, invalid(
			"fee_payer_signature holds a sender address, which only the 0x78 fee-payer envelope carries",
		)
	default:
		return nil, invalid("fee_payer_signature is neither empty, the 0x00 marker nor a signature")
	}
	if k, _, _, _ := rlp.Split(f.AuthorizationList); k != rlp.List {
		return nil, invalid("authorization_list is not a list")
	}
	return t, nil
}

// sponsored reports whether a fee payer takes part (marker or fee payer signature present).
func (t *Tx) sponsored() bool {
	k, c, _, _ := rlp.Split(t.f.FeePayer)
	return k == rlp.List || (k == rlp.Byte && len(c) == 1)
}

// SigningHash is the sender's digest: keccak256(0x76 ‖ rlp(fields)), where for a sponsored
// transaction the fee payer field is the 0x00 marker and fee_token is empty (the sender does
// not commit to the fee token the fee payer picks).
func (t *Tx) SigningHash() [32]byte {
	var h [32]byte
	if !t.sponsored() {
		copy(h[:], crypto.Keccak256(t.raw))
		return h
	}
	items := append([][]byte{}, t.items...)
	items[10] = []byte{0x80}
	items[11] = []byte{feePayerMarker}
	copy(h[:], crypto.Keccak256(t.encode(items)))
	return h
}

func (t *Tx) encode(items [][]byte) []byte {
	content := bytes.Join(items, nil)
	out := []byte{TxType}
	if n := len(content); n < 56 {
		out = append(out, 0xc0+byte(n))
	} else {
		l := big.NewInt(int64(n)).Bytes()
		out = append(out, 0xf7+byte(len(l)))
		out = append(out, l...)
	}
	return append(out, content...)
}

var halfOrder = new(big.Int).Rsh(secp256k1.S256().N, 1)

// Sign signs the transaction and returns the signed serialization: the unsigned fields
// followed by the secp256k1 signature envelope, the 65 bytes r ‖ s ‖ v with v = 27 + recovery
// id and no type prefix, as viem/ox serialize it.
func (t *Tx) Sign(sign RecoverableSigner) ([]byte, error) {
	r, s, v, err := sign(t.SigningHash())
	if err != nil {
		return nil, err
	}
	if v > 1 {
		return nil, fmt.Errorf("signer returned recovery id %d, want 0 or 1", v)
	}
	rb, sb := new(big.Int).SetBytes(r[:]), new(big.Int).SetBytes(s[:])
	if rb.Sign() == 0 || sb.Sign() == 0 || rb.Cmp(secp256k1.S256().N) >= 0 || sb.Cmp(halfOrder) > 0 {
		return nil, errors.New("signer returned an invalid or high-S signature")
	}
	sig := append([]byte{0xb8, 65}, r[:]...)
	sig = append(append(sig, s[:]...), v+27)
	return t.encode(append(append([][]byte{}, t.items...), sig)), nil
}

// Calls returns the transaction's calls.
func (t *Tx) Calls() []Call { return t.f.Calls }

// ChainID is the transaction's chain id.
func (t *Tx) ChainID() uint64 { return t.f.ChainID }

// PolicyView is the tempo.tx value the policy engine reads (Turnkey's TempoTransaction and
// TempoCall): numbers as *big.Int, addresses lowercase 0x-hex, fee_token "" for the native
// token, valid_before/valid_after 0 when unset, and each call's to ("" for creation), value,
// input (0x-hex) and function_signature (the 4-byte selector as 0x-hex, "" when input is
// shorter). from is the signer's address.
func (t *Tx) PolicyView(from string) map[string]any {
	f := &t.f
	calls := make([]any, 0, len(f.Calls))
	for _, c := range f.Calls {
		sel := ""
		if len(c.Data) >= 4 {
			sel = "0x" + hex.EncodeToString(c.Data[:4])
		}
		calls = append(calls, map[string]any{
			"to":                 hexOrEmpty(c.To),
			"value":              new(big.Int).Set(c.Value),
			"input":              "0x" + hex.EncodeToString(c.Data),
			"function_signature": sel,
		})
	}
	return map[string]any{
		"chain_id":                 new(big.Int).SetUint64(f.ChainID),
		"from":                     strings.ToLower(from),
		"nonce":                    new(big.Int).SetUint64(f.Nonce),
		"gas_limit":                new(big.Int).SetUint64(f.Gas),
		"max_fee_per_gas":          new(big.Int).Set(f.MaxFeePerGas),
		"max_priority_fee_per_gas": new(big.Int).Set(f.MaxPriorityFeePerGas),
		"fee_token":                hexOrEmpty(f.FeeToken),
		"valid_before":             new(big.Int).SetUint64(f.ValidBefore),
		"valid_after":              new(big.Int).SetUint64(f.ValidAfter),
		"calls":                    calls,
	}
}

func hexOrEmpty(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return "0x" + hex.EncodeToString(b)
}
