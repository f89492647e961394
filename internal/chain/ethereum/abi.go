package ethereum

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
)

// Call is calldata decoded against a contract's ABI, as the policy language's eth.tx exposes it
// (function_name, function_signature, contract_call_args).
type Call struct {
	Name      string         // e.g. "transfer"
	Signature string         // e.g. "transfer(address,uint256)"
	Args      map[string]any // argument name -> value: *big.Int, lowercase 0x address, 0x bytes, bool, string, []any
}

// DecodeCall decodes calldata (4-byte selector and arguments) with an ABI JSON array.
func DecodeCall(abiJSON, data []byte) (*Call, error) {
	if len(data) < 4 {
		return nil, errors.New("calldata shorter than a function selector")
	}
	parsed, err := abi.JSON(bytes.NewReader(abiJSON))
	if err != nil {
		return nil, fmt.Errorf("ABI: %w", err)
	}
	m, err := parsed.MethodById(data[:4])
	if err != nil {
		return nil, fmt.Errorf("no function with selector 0x%x in the ABI", data[:4])
	}
	raw := map[string]any{}
	if err := m.Inputs.UnpackIntoMap(raw, data[4:]); err != nil {
		return nil, fmt.Errorf("calldata does not decode as %s: %w", m.Sig, err)
	}
	args := make(map[string]any, len(raw))
	for k, v := range raw {
		args[k] = policyValue(reflect.ValueOf(v))
	}
	return &Call{Name: m.RawName, Signature: m.Sig, Args: args}, nil
}

// policyValue converts an ABI-decoded Go value to the plain values policies compare.
func policyValue(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	switch x := v.Interface().(type) {
	case *big.Int:
		return new(big.Int).Set(x)
	case common.Address:
		return strings.ToLower(x.Hex())
	case []byte:
		return "0x" + hex.EncodeToString(x)
	case bool, string:
		return x
	}
	switch v.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return new(big.Int).SetUint64(v.Uint())
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return big.NewInt(v.Int())
	case reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 { // bytesN
			b := make([]byte, v.Len())
			reflect.Copy(reflect.ValueOf(b), v)
			return "0x" + hex.EncodeToString(b)
		}
		fallthrough
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = policyValue(v.Index(i))
		}
		return out
	case reflect.Struct: // tuples
		out := map[string]any{}
		for i := 0; i < v.NumField(); i++ {
			name := v.Type().Field(i).Tag.Get("json")
			if name == "" {
				name = strings.ToLower(v.Type().Field(i).Name[:1]) + v.Type().Field(i).Name[1:]
			}
			out[name] = policyValue(v.Field(i))
		}
		return out
	case reflect.Pointer, reflect.Interface:
		return policyValue(v.Elem())
	}
	return fmt.Sprint(v.Interface())
}
