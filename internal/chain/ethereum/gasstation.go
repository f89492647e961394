package ethereum

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/crypto"
)

// The gas-station delegate (contracts/gasdelegate, docs/gas-station.md): an account delegates to it
// with an EIP-7702 authorization, signs an EIP-712 BatchExecution with its own key, and a paymaster
// sends executeBatch(calls, signature‖nonce‖deadline) to the account and pays the gas. This file
// holds what Latchkey computes for that flow, with no I/O: the digest the account signs, the
// calldata the paymaster sends, the storage slot of the delegate nonce, and the check of a
// delegate's eip712Domain() answer at start.

// MaxBatchCalls is the delegate's batch limit: executeBatch refuses an empty batch and one of more
// than 20 calls.
const MaxBatchCalls = 20

// The delegate's EIP-712 domain name and version, the same as Turnkey's TKGasDelegate so either
// contract serves the same accounts and signatures.
const (
	DelegateDomainName    = "TKGasDelegate"
	DelegateDomainVersion = "1.1"
)

// DelegateStateNamespace names the delegate's state in the account's own storage; the nonce is the
// low 128 bits of the slot DelegateNonceSlot derives from it.
const DelegateStateNamespace = "TKGasDelegate.state"

// ErrInvalidBatch is wrapped by every refusal of a batch's contents; the message names the field
// (parameters.calls…) so the API can answer 400 with it as is.
var ErrInvalidBatch = errors.New("invalid batch")

// BatchCall is one call of a BatchExecution: Value in wei (nil is 0), Data the calldata.
type BatchCall struct {
	To    [20]byte
	Value *big.Int
	Data  []byte
}

// BatchExecution is what the account's key signs: the calls, the delegate nonce they consume and
// the last block timestamp (unix seconds) at which they may run. ChainID and Account make the
// EIP-712 domain: under EIP-7702 the delegate's verifyingContract is the account itself.
type BatchExecution struct {
	ChainID  *big.Int
	Account  [20]byte
	Nonce    *big.Int // uint128
	Deadline uint32
	Calls    []BatchCall
}

var (
	eip712DomainTypeHash = crypto.Keccak256Hash(
		[]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"))
	batchExecutionTypeHash = crypto.Keccak256Hash(
		[]byte("BatchExecution(uint128 nonce,uint32 deadline,Call[] calls)Call(address to,uint256 value,bytes data)"))
	batchCallTypeHash = crypto.Keccak256Hash([]byte("Call(address to,uint256 value,bytes data)"))

	// executeBatchSelector is the first four bytes of keccak256("executeBatch((address,uint256,bytes)[],bytes)").
	executeBatchSelector = [4]byte(crypto.Keccak256([]byte("executeBatch((address,uint256,bytes)[],bytes)"))[:4])

	maxUint128 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))
	maxUint256 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
)

func batchErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidBatch, fmt.Sprintf(format, a...))
}

// CheckBatchCalls refuses what the delegate would refuse on chain: no calls, more than
// MaxBatchCalls, or a value outside uint256.
func CheckBatchCalls(calls []BatchCall) error {
	if len(calls) == 0 {
		return batchErr("parameters.calls: at least one call is required")
	}
	if len(calls) > MaxBatchCalls {
		return batchErr("parameters.calls: %d calls, more than the gas-station delegate's limit of %d",
			len(calls), MaxBatchCalls)
	}
	for i, c := range calls {
		if c.Value != nil && (c.Value.Sign() < 0 || c.Value.Cmp(maxUint256) > 0) {
			return batchErr("parameters.calls[%d].value: not a uint256", i)
		}
	}
	return nil
}

func (b *BatchExecution) check() error {
	if err := CheckBatchCalls(b.Calls); err != nil {
		return err
	}
	if b.ChainID == nil || b.ChainID.Sign() <= 0 || b.ChainID.Cmp(maxUint256) > 0 {
		return batchErr("chain id: not a positive uint256")
	}
	if b.Nonce == nil || b.Nonce.Sign() < 0 || b.Nonce.Cmp(maxUint128) > 0 {
		return batchErr("gasStationNonce: not a uint128")
	}
	return nil
}

// word is v as one big-endian 32-byte ABI word; v must be within uint256 (checked by the callers).
func word(v *big.Int) (w [32]byte) {
	if v != nil {
		v.FillBytes(w[:])
	}
	return w
}

func addressWord(a [20]byte) (w [32]byte) {
	copy(w[12:], a[:])
	return w
}

func uintWord(v uint64) (w [32]byte) {
	binary.BigEndian.PutUint64(w[24:], v)
	return w
}

// Digest is the EIP-712 digest the account's key signs:
// keccak256(0x19 0x01 ‖ domainSeparator(name, version, chainId, account) ‖ hashStruct(BatchExecution)),
// with calls hashed as an array of Call structs (each keccak256(typeHash ‖ to ‖ value ‖ keccak256(data))).
func (b *BatchExecution) Digest() ([32]byte, error) {
	if err := b.check(); err != nil {
		return [32]byte{}, err
	}
	callHashes := make([]byte, 0, 32*len(b.Calls))
	for _, c := range b.Calls {
		to, value := addressWord(c.To), word(c.Value)
		h := crypto.Keccak256(batchCallTypeHash[:], to[:], value[:], crypto.Keccak256(c.Data))
		callHashes = append(callHashes, h...)
	}
	nonce, deadline := word(b.Nonce), uintWord(uint64(b.Deadline))
	structHash := crypto.Keccak256(batchExecutionTypeHash[:], nonce[:], deadline[:], crypto.Keccak256(callHashes))
	chainID, account := word(b.ChainID), addressWord(b.Account)
	domain := crypto.Keccak256(eip712DomainTypeHash[:], crypto.Keccak256([]byte(DelegateDomainName)),
		crypto.Keccak256([]byte(DelegateDomainVersion)), chainID[:], account[:])
	return crypto.Keccak256Hash([]byte{0x19, 0x01}, domain, structHash), nil
}

// ExecuteBatchCalldata is the calldata of executeBatch(Call[] calls, bytes data) for the batch and the
// account's signature of its Digest: data is r ‖ s ‖ v (65 bytes, v 27 or 28, s in the lower half, as
// the delegate demands) ‖ nonce (16 bytes) ‖ deadline (4 bytes), all big-endian.
func (b *BatchExecution) ExecuteBatchCalldata(signature []byte) ([]byte, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	if len(signature) != 65 {
		return nil, fmt.Errorf("%w: signature: %d bytes, not 65", ErrInvalidBatch, len(signature))
	}
	if v := signature[64]; v != 27 && v != 28 {
		return nil, fmt.Errorf("%w: signature: v is %d, not 27 or 28", ErrInvalidBatch, v)
	}
	if new(big.Int).SetBytes(signature[32:64]).Cmp(halfOrder) > 0 {
		return nil, fmt.Errorf("%w: signature: s is in the upper half of the curve order", ErrInvalidBatch)
	}
	packed := make([]byte, 0, 85)
	packed = append(packed, signature...)
	nonce := word(b.Nonce)
	packed = append(packed, nonce[16:]...)
	packed = binary.BigEndian.AppendUint32(packed, b.Deadline)

	callsLen := 32 + 32*len(b.Calls) // the array's length word and its element offsets
	for _, c := range b.Calls {
		callsLen += 4*32 + paddedLen(len(c.Data))
	}
	out := make([]byte, 0, 4+2*32+callsLen+32+paddedLen(len(packed)))
	out = append(out, executeBatchSelector[:]...)
	out = appendWord(out, uintWord(64))                  // offset of calls
	out = appendWord(out, uintWord(uint64(64+callsLen))) // offset of data
	out = appendWord(out, uintWord(uint64(len(b.Calls))))
	offset := 32 * len(b.Calls) // element offsets count from the first offset word
	for _, c := range b.Calls {
		out = appendWord(out, uintWord(uint64(offset)))
		offset += 4*32 + paddedLen(len(c.Data))
	}
	for _, c := range b.Calls {
		out = appendWord(out, addressWord(c.To))
		out = appendWord(out, word(c.Value))
		out = appendWord(out, uintWord(96)) // offset of data within the tuple
		out = appendBytes(out, c.Data)
	}
	return appendBytes(out, packed), nil
}

func paddedLen(n int) int { return (n + 31) / 32 * 32 }

func appendWord(b []byte, w [32]byte) []byte { return append(b, w[:]...) }

// appendBytes appends an ABI bytes value: its length word, then the bytes padded to whole words.
func appendBytes(b, v []byte) []byte {
	b = appendWord(b, uintWord(uint64(len(v))))
	b = append(b, v...)
	return append(b, make([]byte, paddedLen(len(v))-len(v))...)
}

// ERC7201Slot is the first storage slot of an ERC-7201 namespace:
// keccak256(abi.encode(uint256(keccak256(namespace)) - 1)) & ~bytes32(uint256(0xff)).
func ERC7201Slot(namespace string) [32]byte {
	id := new(big.Int).SetBytes(crypto.Keccak256([]byte(namespace)))
	id.Sub(id, big.NewInt(1))
	if id.Sign() < 0 { // uint256 arithmetic wraps: 0 - 1 is 2^256 - 1
		id.Add(id, new(big.Int).Lsh(big.NewInt(1), 256))
	}
	w := word(id)
	slot := crypto.Keccak256Hash(w[:])
	slot[31] = 0
	return slot
}

// DelegateNonceSlot is the storage slot of the account that holds the delegate nonce (its low 128
// bits), readable with eth_getStorageAt without calling the delegate:
// (uint256(keccak256(DelegateStateNamespace)) - 1) & ~0xff. It is the slot Turnkey's TKGasDelegate
// uses, which is ERC-7201's formula without the outer keccak256; ours keeps it so that an account
// moving between the two delegates (one EIP-712 domain) keeps one nonce and no spent signature
// becomes valid again (docs/gas-station.md).
func DelegateNonceSlot() [32]byte {
	slot := [32]byte(crypto.Keccak256([]byte(DelegateStateNamespace)))
	for i := 31; i >= 0; i-- { // minus one, borrowing through trailing zero bytes
		slot[i]--
		if slot[i] != 0xff {
			break
		}
	}
	slot[31] = 0
	return slot
}

// DelegateNonceFromSlot is the nonce held in the word read from DelegateNonceSlot.
func DelegateNonceFromSlot(w [32]byte) *big.Int { return new(big.Int).SetBytes(w[16:]) }

// DelegationCode is the code of an account that delegates to delegate under EIP-7702: 0xef0100 ‖ address.
func DelegationCode(delegate [20]byte) []byte {
	return append([]byte{0xef, 0x01, 0x00}, delegate[:]...)
}

// DelegatedTo reports the delegate an account's code designates, if the code is a delegation.
func DelegatedTo(code []byte) (delegate [20]byte, ok bool) {
	if len(code) != 23 || !bytes.Equal(code[:3], []byte{0xef, 0x01, 0x00}) {
		return delegate, false
	}
	return [20]byte(code[3:]), true
}

// delegateErrors are the delegate's custom errors by selector (the first four bytes of
// keccak256 of the signature), the same names Turnkey's delegate uses.
var delegateErrors = func() map[[4]byte]string {
	m := map[[4]byte]string{}
	for _, name := range []string{"BatchSizeInvalid", "DeadlineExceeded", "InvalidNonce", "NotSelf",
		"ExecutionFailed", "InvalidSignatureData"} {
		m[[4]byte(crypto.Keccak256([]byte(name + "()"))[:4])] = name
	}
	return m
}()

// DelegateRevertReason names the delegate error in a reverted executeBatch's return data
// ("InvalidNonce", …), or "" when the data is not one of them (a call's own revert, an empty revert).
func DelegateRevertReason(data []byte) string {
	if len(data) != 4 {
		return ""
	}
	return delegateErrors[[4]byte(data)]
}
