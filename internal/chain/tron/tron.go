package tron

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/mr-tron/base58"
)

// RecoverableSigner signs a 32-byte digest with secp256k1 and returns r, s (32 bytes each,
// big-endian, low-S) and the recovery id v (0 or 1). It has the same shape as
// ethereum.RecoverableSigner.
type RecoverableSigner func(digest [32]byte) (r, s [32]byte, v byte, err error)

// ErrInvalidTransaction wraps every parse error of ParseRaw.
var ErrInvalidTransaction = errors.New("invalid tron transaction")

// MaxRawDataSize bounds the raw_data ParseRaw reads (docs/limits.md §5.2): java-tron refuses a
// transaction over 500 KiB (TRANSACTION_MAX_BYTE_SIZE), signatures included. Within it the
// parse is linear: fields are read in one pass without collecting the unknown ones, every
// length is checked against the input, and messages nest only where Tron's protocol nests them
// (raw_data, contract, parameter, permission, key).
const MaxRawDataSize = 500 << 10

// contractTypes names the values of protocol.Transaction.Contract.ContractType
// (java-tron protocol/src/main/protos/core/Tron.proto).
var contractTypes = map[uint64]string{
	0: "AccountCreateContract", 1: "TransferContract", 2: "TransferAssetContract",
	3: "VoteAssetContract", 4: "VoteWitnessContract", 5: "WitnessCreateContract",
	6: "AssetIssueContract", 8: "WitnessUpdateContract", 9: "ParticipateAssetIssueContract",
	10: "AccountUpdateContract", 11: "FreezeBalanceContract", 12: "UnfreezeBalanceContract",
	13: "WithdrawBalanceContract", 14: "UnfreezeAssetContract", 15: "UpdateAssetContract",
	16: "ProposalCreateContract", 17: "ProposalApproveContract", 18: "ProposalDeleteContract",
	19: "SetAccountIdContract", 20: "CustomContract", 30: "CreateSmartContract",
	31: "TriggerSmartContract", 32: "GetContract", 33: "UpdateSettingContract",
	41: "ExchangeCreateContract", 42: "ExchangeInjectContract", 43: "ExchangeWithdrawContract",
	44: "ExchangeTransactionContract", 45: "UpdateEnergyLimitContract",
	46: "AccountPermissionUpdateContract", 48: "ClearABIContract", 49: "UpdateBrokerageContract",
	51: "ShieldedTransferContract", 52: "MarketSellAssetContract", 53: "MarketCancelOrderContract",
	54: "FreezeBalanceV2Contract", 55: "UnfreezeBalanceV2Contract",
	56: "WithdrawExpireUnfreezeContract", 57: "DelegateResourceContract",
	58: "UnDelegateResourceContract", 59: "CancelAllUnfreezeV2Contract",
}

var resourceCodes = map[uint64]string{0: "BANDWIDTH", 1: "ENERGY", 2: "TRON_POWER"}

var permissionTypes = map[uint64]string{0: "Owner", 1: "Witness", 2: "Active"}

// Tx is one parsed unsigned Tron transaction (protocol.Transaction.raw).
type Tx struct {
	raw []byte

	RefBlockBytes []byte
	RefBlockNum   int64
	RefBlockHash  []byte
	Expiration    int64
	Timestamp     int64
	Data          []byte // the memo
	FeeLimit      int64
	Contracts     []Contract
}

// Contract is one Transaction.Contract: its type name and, for the types Turnkey's policy
// engine reads, its parameters as the tron.tx.contract[] view renders them.
type Contract struct {
	Type         string
	TypeURL      string
	PermissionID int64
	// Fields holds the policy fields of the contract parameter (owner_address, to_address,
	// amount, ...), addresses as base58check T… strings, numbers as *big.Int.
	Fields map[string]any
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidTransaction, fmt.Sprintf(format, a...))
}

// ParseRaw parses TronWeb's raw_data_hex bytes (a serialized protocol.Transaction.raw).
// A transaction must hold exactly one contract, as java-tron requires.
func ParseRaw(raw []byte) (*Tx, error) {
	if len(raw) == 0 {
		return nil, invalid("empty raw_data")
	}
	if len(raw) > MaxRawDataSize {
		return nil, invalid("raw_data is %d bytes; java-tron accepts at most %d", len(raw), MaxRawDataSize)
	}
	m, err := decode("raw_data", raw, schema{
		varint:   []uint64{3, 8, 14, 18},
		bytes:    []uint64{1, 4, 10, 12},
		repeated: []uint64{9, 11},
	})
	if err != nil {
		return nil, invalid("%v", err)
	}
	if len(m.repeated[9]) > 0 {
		return nil, invalid("raw_data.auths is set; it is not supported")
	}
	t := &Tx{
		raw:           append([]byte(nil), raw...),
		RefBlockBytes: m.bytes[1],
		RefBlockNum:   int64(m.varints[3]),
		RefBlockHash:  m.bytes[4],
		Expiration:    int64(m.varints[8]),
		Timestamp:     int64(m.varints[14]),
		Data:          m.bytes[10],
		FeeLimit:      int64(m.varints[18]),
	}
	if t.FeeLimit < 0 || t.Expiration < 0 || t.Timestamp < 0 {
		return nil, invalid("raw_data has a negative expiration, timestamp or fee_limit")
	}
	contracts := m.repeated[11]
	if len(contracts) != 1 {
		return nil, invalid("raw_data has %d contracts; a Tron transaction has exactly one", len(contracts))
	}
	for i, cb := range contracts {
		c, err := parseContract(cb)
		if err != nil {
			return nil, invalid("contract[%d]: %v", i, err)
		}
		t.Contracts = append(t.Contracts, c)
	}
	return t, nil
}

func parseContract(b []byte) (Contract, error) {
	m, err := decode("contract", b, schema{varint: []uint64{1, 5}, bytes: []uint64{2, 3, 4}})
	if err != nil {
		return Contract{}, err
	}
	code := m.varints[1]
	name, ok := contractTypes[code]
	if !ok {
		return Contract{}, fmt.Errorf("unknown contract type %d", code)
	}
	c := Contract{Type: name, PermissionID: int64(int32(m.varints[5]))}
	param, err := decode("parameter", m.bytes[2], schema{bytes: []uint64{1, 2}})
	if err != nil {
		return Contract{}, err
	}
	c.TypeURL = string(param.bytes[1])
	// java-tron unpacks the Any by its type: a parameter of another type is not this contract.
	if i := strings.LastIndexByte(c.TypeURL, '/'); c.TypeURL[i+1:] != "protocol."+name {
		return Contract{}, fmt.Errorf("parameter type_url %q does not match contract type %s", c.TypeURL, name)
	}
	c.Fields, err = parseParameter(name, param.bytes[2])
	if err != nil {
		return Contract{}, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// parameterSchemas are the parameter messages whose fields the policy view shows
// (java-tron protocol/src/main/protos/core/contract/*.proto).
var parameterSchemas = map[string]schema{
	"TransferContract":                {bytes: []uint64{1, 2}, varint: []uint64{3}},
	"TriggerSmartContract":            {bytes: []uint64{1, 2, 4}, varint: []uint64{3, 5, 6}},
	"FreezeBalanceV2Contract":         {bytes: []uint64{1}, varint: []uint64{2, 3}},
	"UnfreezeBalanceV2Contract":       {bytes: []uint64{1}, varint: []uint64{2, 3}},
	"DelegateResourceContract":        {bytes: []uint64{1, 4}, varint: []uint64{2, 3, 5, 6}},
	"UnDelegateResourceContract":      {bytes: []uint64{1, 4}, varint: []uint64{2, 3}},
	"AccountPermissionUpdateContract": {bytes: []uint64{1, 2, 3}, repeated: []uint64{4}},
}

func parseParameter(name string, b []byte) (map[string]any, error) {
	s, ok := parameterSchemas[name]
	if !ok {
		// Every system contract has owner_address as field 1; show it when it is an address.
		s = schema{bytes: []uint64{1}}
	}
	m, err := decode(name, b, s)
	if err != nil {
		return nil, err
	}
	f := map[string]any{}
	addr := func(key string, num uint64, required bool) error {
		v, ok := m.bytes[num]
		if !ok {
			if required {
				return fmt.Errorf("%s is missing", key)
			}
			return nil
		}
		a, err := base58Address(v)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		f[key] = a
		return nil
	}
	amount := func(key string, num uint64) error {
		v := int64(m.varints[num])
		if v < 0 {
			return fmt.Errorf("%s is negative", key)
		}
		f[key] = big.NewInt(v)
		return nil
	}
	resource := func(num uint64) error {
		r, ok := resourceCodes[m.varints[num]]
		if !ok {
			return fmt.Errorf("unknown resource %d", m.varints[num])
		}
		f["resource"] = r
		return nil
	}
	var errs []error
	switch name {
	case "TransferContract":
		errs = append(errs, addr("owner_address", 1, true), addr("to_address", 2, true), amount("amount", 3))
	case "TriggerSmartContract":
		errs = append(errs, addr("owner_address", 1, true), addr("contract_address", 2, true),
			amount("call_value", 3), amount("call_token_value", 5), amount("token_id", 6))
		f["data"] = hex.EncodeToString(m.bytes[4])
	case "FreezeBalanceV2Contract":
		errs = append(errs, addr("owner_address", 1, true), amount("frozen_balance", 2), resource(3))
	case "UnfreezeBalanceV2Contract":
		errs = append(errs, addr("owner_address", 1, true), amount("unfreeze_balance", 2), resource(3))
	case "DelegateResourceContract":
		errs = append(errs, addr("owner_address", 1, true), resource(2), amount("balance", 3),
			addr("receiver_address", 4, true), amount("lock_period", 6))
		f["lock"] = m.varints[5] != 0
	case "UnDelegateResourceContract":
		errs = append(errs, addr("owner_address", 1, true), resource(2), amount("balance", 3),
			addr("receiver_address", 4, true))
	case "AccountPermissionUpdateContract":
		errs = append(errs, addr("owner_address", 1, true))
		if b, ok := m.bytes[2]; ok {
			p, err := parsePermission(b)
			errs = append(errs, err)
			f["owner"] = p
		}
		if b, ok := m.bytes[3]; ok {
			p, err := parsePermission(b)
			errs = append(errs, err)
			f["witness"] = p
		}
		actives := []any{}
		for _, b := range m.repeated[4] {
			p, err := parsePermission(b)
			errs = append(errs, err)
			actives = append(actives, p)
		}
		f["actives"] = actives
	default:
		if v, ok := m.bytes[1]; ok {
			if a, err := base58Address(v); err == nil {
				f["owner_address"] = a
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f, nil
}

func parsePermission(b []byte) (map[string]any, error) {
	m, err := decode(
		"permission",
		b,
		schema{varint: []uint64{1, 2, 4, 5}, bytes: []uint64{3, 6}, repeated: []uint64{7}},
	)
	if err != nil {
		return nil, err
	}
	typ, ok := permissionTypes[m.varints[1]]
	if !ok {
		return nil, fmt.Errorf("permission: unknown type %d", m.varints[1])
	}
	keys := []any{}
	for _, kb := range m.repeated[7] {
		k, err := decode("key", kb, schema{bytes: []uint64{1}, varint: []uint64{2}})
		if err != nil {
			return nil, err
		}
		a, err := base58Address(k.bytes[1])
		if err != nil {
			return nil, fmt.Errorf("permission key: %w", err)
		}
		keys = append(keys, map[string]any{"address": a, "weight": big.NewInt(int64(k.varints[2]))})
	}
	return map[string]any{
		"type":            typ,
		"id":              big.NewInt(int64(int32(m.varints[2]))),
		"permission_name": string(m.bytes[3]),
		"threshold":       big.NewInt(int64(m.varints[4])),
		"parent_id":       big.NewInt(int64(int32(m.varints[5]))),
		"operations":      hex.EncodeToString(m.bytes[6]),
		"keys":            keys,
	}, nil
}

// base58Address renders a 21-byte Tron address (0x41 ‖ 20 bytes) as base58check.
func base58Address(b []byte) (string, error) {
	if len(b) != 21 || b[0] != 0x41 {
		return "", fmt.Errorf("not a Tron address (want 21 bytes starting 0x41, got %d bytes)", len(b))
	}
	h1 := sha256.Sum256(b)
	h2 := sha256.Sum256(h1[:])
	return base58.Encode(append(append([]byte(nil), b...), h2[:4]...)), nil
}

// Raw returns the raw_data bytes as parsed.
func (t *Tx) Raw() []byte { return append([]byte(nil), t.raw...) }

// SigningHash is SHA-256 of the raw_data bytes, which is also the transaction id.
func (t *Tx) SigningHash() [32]byte { return sha256.Sum256(t.raw) }

var halfOrder = new(big.Int).Rsh(secp256k1.S256().N, 1)

// Sign signs the transaction and returns the serialized protocol.Transaction
// {raw_data = 1, signature = 2}, the signature being r ‖ s ‖ v with v = recovery id + 27, as
// TronWeb's signTransaction produces it (java-tron accepts 0/1 and 27/28).
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
	sig := make([]byte, 0, 65)
	sig = append(append(append(sig, r[:]...), s[:]...), v+27)
	out := appendBytesField(nil, 1, t.raw)
	return appendBytesField(out, 2, sig), nil
}

// PolicyView is the tron.tx value the policy engine reads (Turnkey's policy language,
// TronTransaction and TronContract): ref_block_bytes and ref_block_hash as lowercase hex,
// expiration, timestamp and fee_limit as *big.Int, data (the memo) as text when it is UTF-8
// and lowercase hex otherwise, and contract[] with type, permission_id and the parameter
// fields (addresses base58check, TriggerSmartContract data as lowercase hex without 0x).
func (t *Tx) PolicyView() map[string]any {
	contracts := make([]any, 0, len(t.Contracts))
	for _, c := range t.Contracts {
		m := map[string]any{"type": c.Type, "permission_id": big.NewInt(c.PermissionID)}
		for k, v := range c.Fields {
			m[k] = v
		}
		contracts = append(contracts, m)
	}
	memo := hex.EncodeToString(t.Data)
	if utf8.Valid(t.Data) {
		memo = string(t.Data)
	}
	return map[string]any{
		"ref_block_bytes": hex.EncodeToString(t.RefBlockBytes),
		"ref_block_hash":  hex.EncodeToString(t.RefBlockHash),
		"expiration":      big.NewInt(t.Expiration),
		"timestamp":       big.NewInt(t.Timestamp),
		"data":            memo,
		"fee_limit":       big.NewInt(t.FeeLimit),
		"contract":        contracts,
	}
}
