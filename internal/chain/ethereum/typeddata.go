package ethereum

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
)

// ErrInvalidTypedData wraps every error of HashTypedData.
var ErrInvalidTypedData = errors.New("invalid EIP-712 typed data")

// ErrInvalidAuthorization wraps every error of HashAuthorization.
var ErrInvalidAuthorization = errors.New("invalid EIP-7702 authorization")

type typedField struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type typedData struct {
	Types       map[string][]typedField `json:"types"`
	PrimaryType string                  `json:"primaryType"`
	Domain      map[string]any          `json:"domain"`
	Message     map[string]any          `json:"message"`

	typeHashes map[string][]byte
}

// domainFields is the EIP-712 order of the EIP712Domain fields, used to derive the domain
// type when the payload leaves it out (viem's serializeTypedData does).
var domainFields = []typedField{
	{"name", "string"}, {"version", "string"}, {"chainId", "uint256"},
	{"verifyingContract", "address"}, {"salt", "bytes32"},
}

const maxTypedDepth = 32

var (
	arrayType = regexp.MustCompile(`^(.+)\[([0-9]*)\]$`)
	intType   = regexp.MustCompile(`^(u?)int([0-9]*)$`)
	bytesN    = regexp.MustCompile(`^bytes([0-9]+)$`)
	// typeName is what viem and ethers hash as a struct type name: anything but the characters
	// encodeType builds on ("Name(type field,...)", "T[]") and whitespace. EIP-712 asks for an
	// identifier, but Hyperliquid signs "HyperliquidTransaction:ApproveAgent", and both libraries
	// hash it as written.
	typeName = regexp.MustCompile(`^[^\s(),\[\]]+$`)
)

func typedErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidTypedData, fmt.Sprintf(format, a...))
}

// HashTypedData computes the EIP-712 digest keccak256(0x19 0x01 ‖ domainSeparator ‖
// hashStruct(message)) of a JSON typed-data payload as viem's serializeTypedData or ethers'
// TypedDataEncoder.getPayload produce it (with or without EIP712Domain in types; numbers as
// JSON numbers, decimal or 0x-hex strings), and returns the eth.eip_712 policy view:
// primary_type, domain{name, version, chain_id, verifying_contract} (the fields present),
// and message with integers as *big.Int and hex values lowercase.
func HashTypedData(payload []byte) (digest [32]byte, view map[string]any, err error) {
	var td typedData
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&td); err != nil {
		return digest, nil, typedErr("%v", err)
	}
	if dec.More() {
		return digest, nil, typedErr("trailing data after the JSON object")
	}
	if td.Types == nil || td.PrimaryType == "" || td.Domain == nil || td.Message == nil {
		return digest, nil, typedErr("types, primaryType, domain and message are required")
	}
	if _, ok := td.Types["EIP712Domain"]; !ok {
		var fields []typedField
		for _, f := range domainFields {
			if v, ok := td.Domain[f.Name]; ok && v != nil {
				fields = append(fields, f)
			}
		}
		td.Types["EIP712Domain"] = fields
	}
	for name, fields := range td.Types {
		if !typeName.MatchString(name) {
			return digest, nil, typedErr("bad type name %q", name)
		}
		seen := map[string]bool{}
		for _, f := range fields {
			if f.Name == "" || seen[f.Name] {
				return digest, nil, typedErr("type %s: empty or repeated field name %q", name, f.Name)
			}
			seen[f.Name] = true
			if err := td.checkType(f.Type); err != nil {
				return digest, nil, typedErr("type %s field %s: %v", name, f.Name, err)
			}
		}
	}
	if _, ok := td.Types[td.PrimaryType]; !ok {
		return digest, nil, typedErr("primaryType %q is not in types", td.PrimaryType)
	}
	domainHash, domainView, err := td.hashStruct("EIP712Domain", td.Domain, "domain", 0)
	if err != nil {
		return digest, nil, err
	}
	var msgHash [32]byte
	var msgView map[string]any
	if td.PrimaryType != "EIP712Domain" {
		msgHash, msgView, err = td.hashStruct(td.PrimaryType, td.Message, "message", 0)
		if err != nil {
			return digest, nil, err
		}
	}
	buf := make([]byte, 0, 66)
	buf = append(buf, 0x19, 0x01)
	buf = append(buf, domainHash[:]...)
	if td.PrimaryType != "EIP712Domain" {
		buf = append(buf, msgHash[:]...)
	}
	copy(digest[:], crypto.Keccak256(buf))

	domain := map[string]any{}
	for from, to := range map[string]string{"name": "name", "version": "version", "chainId": "chain_id", "verifyingContract": "verifying_contract", "salt": "salt"} {
		if v, ok := domainView[from]; ok {
			domain[to] = v
		}
	}
	if msgView == nil {
		msgView = map[string]any{}
	}
	return digest, map[string]any{"primary_type": td.PrimaryType, "domain": domain, "message": msgView}, nil
}

// checkType reports whether t is an atomic, dynamic, struct or array type.
func (td *typedData) checkType(t string) error {
	for {
		m := arrayType.FindStringSubmatch(t)
		if m == nil {
			break
		}
		t = m[1]
	}
	if _, ok := td.Types[t]; ok {
		return nil
	}
	switch t {
	case "address", "bool", "string", "bytes":
		return nil
	}
	if m := intType.FindStringSubmatch(t); m != nil {
		if _, err := intBits(m[2]); err != nil {
			return err
		}
		return nil
	}
	if m := bytesN.FindStringSubmatch(t); m != nil {
		if n, _ := strconv.Atoi(m[1]); n >= 1 && n <= 32 {
			return nil
		}
	}
	return fmt.Errorf("unknown type %q", t)
}

func intBits(s string) (int, error) {
	if s == "" {
		return 256, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 8 || n > 256 || n%8 != 0 {
		return 0, fmt.Errorf("bad integer size %q", s)
	}
	return n, nil
}

// encodeType is the EIP-712 type string: the primary type, then its dependencies sorted.
func (td *typedData) encodeType(primary string) string {
	deps := map[string]bool{}
	var walk func(string)
	walk = func(t string) {
		if deps[t] {
			return
		}
		deps[t] = true
		for _, f := range td.Types[t] {
			base := f.Type
			if i := strings.IndexByte(base, '['); i >= 0 {
				base = base[:i]
			}
			if _, ok := td.Types[base]; ok {
				walk(base)
			}
		}
	}
	walk(primary)
	delete(deps, primary)
	others := make([]string, 0, len(deps))
	for d := range deps {
		others = append(others, d)
	}
	sort.Strings(others)
	var b strings.Builder
	for _, t := range append([]string{primary}, others...) {
		b.WriteString(t)
		b.WriteByte('(')
		for i, f := range td.Types[t] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(f.Type)
			b.WriteByte(' ')
			b.WriteString(f.Name)
		}
		b.WriteByte(')')
	}
	return b.String()
}

func (td *typedData) hashStruct(t string, v any, path string, depth int) ([32]byte, map[string]any, error) {
	var h [32]byte
	if depth > maxTypedDepth {
		return h, nil, typedErr("%s: nested too deeply", path)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return h, nil, typedErr("%s: want an object for struct %s", path, t)
	}
	fields := td.Types[t]
	enc := make([]byte, 0, 32*(len(fields)+1))
	th, ok := td.typeHashes[t]
	if !ok {
		th = crypto.Keccak256([]byte(td.encodeType(t)))
		if td.typeHashes == nil {
			td.typeHashes = map[string][]byte{}
		}
		td.typeHashes[t] = th
	}
	enc = append(enc, th...)
	view := make(map[string]any, len(fields))
	for _, f := range fields {
		fv, ok := obj[f.Name]
		if !ok {
			return h, nil, typedErr("%s.%s: missing", path, f.Name)
		}
		word, fview, err := td.encodeField(f.Type, fv, path+"."+f.Name, depth+1)
		if err != nil {
			return h, nil, err
		}
		enc = append(enc, word[:]...)
		view[f.Name] = fview
	}
	copy(h[:], crypto.Keccak256(enc))
	return h, view, nil
}

func (td *typedData) encodeField(t string, v any, path string, depth int) ([32]byte, any, error) {
	var w [32]byte
	if depth > maxTypedDepth {
		return w, nil, typedErr("%s: nested too deeply", path)
	}
	if m := arrayType.FindStringSubmatch(t); m != nil {
		items, ok := v.([]any)
		if !ok {
			return w, nil, typedErr("%s: want an array for %s", path, t)
		}
		if m[2] != "" {
			if n, err := strconv.Atoi(m[2]); err != nil || n != len(items) {
				return w, nil, typedErr("%s: want %s elements for %s, got %d", path, m[2], t, len(items))
			}
		}
		enc := make([]byte, 0, 32*len(items))
		view := make([]any, len(items))
		for i, it := range items {
			iw, iv, err := td.encodeField(m[1], it, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if err != nil {
				return w, nil, err
			}
			enc = append(enc, iw[:]...)
			view[i] = iv
		}
		copy(w[:], crypto.Keccak256(enc))
		return w, view, nil
	}
	if _, ok := td.Types[t]; ok {
		return td.hashStruct(t, v, path, depth)
	}
	switch t {
	case "string":
		s, ok := v.(string)
		if !ok {
			return w, nil, typedErr("%s: want a string", path)
		}
		copy(w[:], crypto.Keccak256([]byte(s)))
		return w, s, nil
	case "bytes":
		b, err := hexBytes(v)
		if err != nil {
			return w, nil, typedErr("%s: %v", path, err)
		}
		copy(w[:], crypto.Keccak256(b))
		return w, "0x" + hex.EncodeToString(b), nil
	case "bool":
		b, ok := v.(bool)
		if !ok {
			return w, nil, typedErr("%s: want true or false", path)
		}
		if b {
			w[31] = 1
		}
		return w, b, nil
	case "address":
		b, err := hexBytes(v)
		if err != nil || len(b) != 20 {
			return w, nil, typedErr("%s: want a 20-byte 0x-hex address", path)
		}
		copy(w[12:], b)
		return w, "0x" + hex.EncodeToString(b), nil
	}
	if m := bytesN.FindStringSubmatch(t); m != nil {
		n, _ := strconv.Atoi(m[1])
		b, err := hexBytes(v)
		if err != nil || len(b) != n {
			return w, nil, typedErr("%s: want %d bytes of 0x-hex for %s", path, n, t)
		}
		copy(w[:], b)
		return w, "0x" + hex.EncodeToString(b), nil
	}
	m := intType.FindStringSubmatch(t)
	if m == nil {
		return w, nil, typedErr("%s: unknown type %q", path, t)
	}
	bits, _ := intBits(m[2])
	x, err := parseInteger(v)
	if err != nil {
		return w, nil, typedErr("%s: %v", path, err)
	}
	signed := m[1] == ""
	lo, hi := new(big.Int), new(big.Int).Lsh(big.NewInt(1), uint(bits))
	if signed {
		hi.Rsh(hi, 1)
		lo.Neg(hi)
	}
	if x.Cmp(lo) < 0 || x.Cmp(hi) >= 0 {
		return w, nil, typedErr("%s: %s out of range for %s", path, x, t)
	}
	enc := x
	if x.Sign() < 0 {
		enc = new(big.Int).Add(x, new(big.Int).Lsh(big.NewInt(1), 256))
	}
	enc.FillBytes(w[:])
	return w, x, nil
}

// parseInteger reads a JSON number, a decimal string or a 0x-hex string (optionally negative).
func parseInteger(v any) (*big.Int, error) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	default:
		return nil, errors.New("want an integer (number, decimal or 0x-hex string)")
	}
	neg := strings.HasPrefix(s, "-")
	body := strings.TrimPrefix(s, "-")
	n := new(big.Int)
	ok := false
	switch {
	case strings.HasPrefix(body, "0x") || strings.HasPrefix(body, "0X"):
		if len(body) > 2 && len(body) <= 66 {
			_, ok = n.SetString(body[2:], 16)
		}
	case strings.ContainsAny(body, ".eE"):
		// JavaScript prints large numbers as 1e+21; accept them only when exact integers.
		if len(body) <= 100 {
			if f, _, err := big.ParseFloat(body, 10, 1024, big.ToNearestEven); err == nil && f.IsInt() {
				n, _ = f.Int(nil)
				ok = n.BitLen() <= 256
			}
		}
	default:
		if len(body) > 0 && len(body) <= 80 {
			_, ok = n.SetString(body, 10)
		}
	}
	if !ok {
		return nil, fmt.Errorf("not an integer: %q", s)
	}
	if neg {
		n.Neg(n)
	}
	return n, nil
}

func hexBytes(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok || !(strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")) {
		return nil, errors.New("want a 0x-hex string")
	}
	s = s[2:]
	if len(s)%2 == 1 {
		s = "0" + s
	}
	return hex.DecodeString(s)
}

type authorizationPayload struct {
	Address *string `json:"address"`
	ChainID any     `json:"chainId"`
	Nonce   any     `json:"nonce"`
}

// HashAuthorization computes the EIP-7702 authorization digest keccak256(0x05 ‖
// rlp([chain_id, address, nonce])) of the JSON payload {"address":"0x..","chainId":..,
// "nonce":..} that @turnkey/viem's signAuthorization sends (numbers as JSON numbers, decimal
// or 0x-hex strings), and returns the eth.eip_7702_authorization view {address (lowercase),
// chain_id, nonce (*big.Int)}.
func HashAuthorization(payload []byte) (digest [32]byte, view map[string]any, err error) {
	var p authorizationPayload
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return digest, nil, fmt.Errorf("%w: %v", ErrInvalidAuthorization, err)
	}
	if dec.More() {
		return digest, nil, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalidAuthorization)
	}
	if p.Address == nil || p.ChainID == nil || p.Nonce == nil {
		return digest, nil, fmt.Errorf("%w: address, chainId and nonce are required", ErrInvalidAuthorization)
	}
	addr, err := hexBytes(*p.Address)
	if err != nil || len(addr) != 20 {
		return digest, nil, fmt.Errorf("%w: address: want a 20-byte 0x-hex address", ErrInvalidAuthorization)
	}
	chainID, err := parseInteger(p.ChainID)
	if err != nil || chainID.Sign() < 0 || chainID.BitLen() > 256 {
		return digest, nil, fmt.Errorf("%w: chainId: want an unsigned 256-bit integer", ErrInvalidAuthorization)
	}
	nonce, err := parseInteger(p.Nonce)
	if err != nil || nonce.Sign() < 0 || !nonce.IsUint64() {
		return digest, nil, fmt.Errorf("%w: nonce: want an unsigned 64-bit integer", ErrInvalidAuthorization)
	}
	enc, err := rlp.EncodeToBytes([]any{chainID, addr, nonce.Uint64()})
	if err != nil {
		return digest, nil, fmt.Errorf("%w: %v", ErrInvalidAuthorization, err)
	}
	copy(digest[:], crypto.Keccak256(append([]byte{0x05}, enc...)))
	return digest, map[string]any{
		"address":  "0x" + hex.EncodeToString(addr),
		"chain_id": chainID,
		"nonce":    nonce,
	}, nil
}
