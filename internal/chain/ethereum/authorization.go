package ethereum

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
)

// ErrInvalidAuthorization wraps every error of HashAuthorization.
var ErrInvalidAuthorization = errors.New("invalid EIP-7702 authorization")

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
