package ethereum

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// gasStationVectors is testdata/gasstation.json, written by testdata/gen/gasstation.mjs with viem.
type gasStationVectors struct {
	Delegate             string            `json:"delegate"`
	Account              string            `json:"account"`
	NonceSlot            string            `json:"nonceSlot"`
	ERC7201Slots         map[string]string `json:"erc7201Slots"`
	ExecuteBatchSelector string            `json:"executeBatchSelector"`
	DomainAnswer         struct {
		ChainID  string `json:"chainId"`
		Delegate string `json:"delegate"`
		Answer   string `json:"answer"`
	} `json:"domainAnswer"`
	Vectors []struct {
		Name     string `json:"name"`
		ChainID  string `json:"chainId"`
		Account  string `json:"account"`
		Nonce    string `json:"nonce"`
		Deadline uint32 `json:"deadline"`
		Calls    []struct {
			To    string `json:"to"`
			Value string `json:"value"`
			Data  string `json:"data"`
		} `json:"calls"`
		Digest    string `json:"digest"`
		Signature string `json:"signature"`
		Calldata  string `json:"calldata"`
	} `json:"vectors"`
}

func loadGasStationVectors(t testing.TB) gasStationVectors {
	return readVectors[gasStationVectors](t, "testdata/gasstation.json")
}

func decimal(t testing.TB, s string) *big.Int {
	t.Helper()
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("%q is not a decimal", s)
	}
	return v
}

// delegateABI is the ABI of contracts/gasdelegate as checked in beside its bytecode.
func delegateABI(t testing.TB) abi.ABI {
	t.Helper()
	b, err := os.ReadFile("../../../contracts/gasdelegate/LatchkeyGasDelegate.json")
	if err != nil {
		t.Fatal(err)
	}
	var artifact struct {
		ABI json.RawMessage `json:"abi"`
	}
	if err := json.Unmarshal(b, &artifact); err != nil {
		t.Fatal(err)
	}
	parsed, err := abi.JSON(bytes.NewReader(artifact.ABI))
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}

// abiCall is BatchCall as go-ethereum's ABI packer wants the contract's Call tuple.
type abiCall struct {
	To    common.Address
	Value *big.Int
	Data  []byte
}

func TestBatchExecutionMatchesViem(t *testing.T) {
	v := loadGasStationVectors(t)
	contract := delegateABI(t)
	for _, vec := range v.Vectors {
		t.Run(vec.Name, func(t *testing.T) {
			b := BatchExecution{ChainID: decimal(t, vec.ChainID), Account: common.HexToAddress(vec.Account),
				Nonce: decimal(t, vec.Nonce), Deadline: vec.Deadline}
			for _, c := range vec.Calls {
				b.Calls = append(b.Calls, BatchCall{To: common.HexToAddress(c.To), Value: decimal(t, c.Value),
					Data: unhex(t, c.Data)})
			}
			digest, err := b.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(digest[:]); "0x"+got != vec.Digest {
				t.Fatalf("digest 0x%s, viem %s", got, vec.Digest)
			}
			sig := unhex(t, vec.Signature)
			recoverable := append(append([]byte(nil), sig[:64]...), sig[64]-27)
			pub, err := crypto.SigToPub(digest[:], recoverable)
			if err != nil || crypto.PubkeyToAddress(*pub) != common.HexToAddress(vec.Account) {
				t.Fatalf("the vector's signature does not recover to the account (%v)", err)
			}
			calldata, err := b.ExecuteBatchCalldata(sig)
			if err != nil {
				t.Fatal(err)
			}
			if want := unhex(t, vec.Calldata); !bytes.Equal(calldata, want) {
				t.Fatalf("calldata\n 0x%x\nviem\n 0x%x", calldata, want)
			}
			// A second oracle: go-ethereum's packer with the contract's checked-in ABI.
			calls := make([]abiCall, len(b.Calls))
			for i, c := range b.Calls {
				calls[i] = abiCall{c.To, c.Value, c.Data}
			}
			packed, err := contract.Pack("executeBatch", calls, calldata[len(calldata)-96:len(calldata)-11])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(calldata, packed) {
				t.Fatalf("calldata differs from go-ethereum's packing with the contract's ABI")
			}
		})
	}
	if !bytes.Equal(contract.Methods["executeBatch"].ID, executeBatchSelector[:]) {
		t.Errorf("the contract's executeBatch is %s", contract.Methods["executeBatch"].Sig)
	}
	if got := "0x" + hex.EncodeToString(executeBatchSelector[:]); got != v.ExecuteBatchSelector {
		t.Errorf("executeBatch selector %s, viem %s", got, v.ExecuteBatchSelector)
	}
}

func TestDelegateNonceSlot(t *testing.T) {
	v := loadGasStationVectors(t)
	slot := DelegateNonceSlot()
	if got := "0x" + hex.EncodeToString(slot[:]); got != v.NonceSlot {
		t.Fatalf("nonce slot %s, viem %s", got, v.NonceSlot)
	}
	// The contract hard-codes the slot: it must be the one this formula gives.
	src, err := os.ReadFile("../../../contracts/gasdelegate/LatchkeyGasDelegate.sol")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte("STATE_SLOT = "+v.NonceSlot+";")) {
		t.Fatalf("LatchkeyGasDelegate.sol does not declare STATE_SLOT = %s", v.NonceSlot)
	}
	// ERC-7201 proper, against viem and against the EIP's own example ("example.main").
	if v.ERC7201Slots["example.main"] != "0x183a6125c38840424c4a85fa12bab2ab606c4b6d0e7cc73c0c06ba5300eab500" {
		t.Fatalf("the vectors' ERC-7201 example is not the EIP's: %s", v.ERC7201Slots["example.main"])
	}
	for ns, want := range v.ERC7201Slots {
		if got := ERC7201Slot(ns); "0x"+hex.EncodeToString(got[:]) != want {
			t.Errorf("ERC7201Slot(%q) 0x%x, want %s", ns, got, want)
		}
	}
	if ERC7201Slot(DelegateStateNamespace) == slot {
		t.Error("the delegate's slot is documented as differing from ERC-7201's, yet they are equal")
	}
	var w [32]byte
	w[0] = 0xff // the top 128 bits are not the nonce's
	w[31] = 7
	if n := DelegateNonceFromSlot(w); n.Cmp(big.NewInt(7)) != 0 {
		t.Errorf("nonce from slot %s, want 7", n)
	}
}

func TestBatchRefusals(t *testing.T) {
	call := BatchCall{To: common.HexToAddress("0xbeef"), Value: big.NewInt(1)}
	calls := func(n int) []BatchCall {
		c := make([]BatchCall, n)
		for i := range c {
			c[i] = call
		}
		return c
	}
	valid := func() BatchExecution {
		return BatchExecution{ChainID: big.NewInt(1), Nonce: big.NewInt(0), Deadline: 1, Calls: calls(1)}
	}
	tooLarge := new(big.Int).Lsh(big.NewInt(1), 256)
	tests := []struct {
		name   string
		change func(*BatchExecution)
		want   string
	}{
		{"no calls", func(b *BatchExecution) { b.Calls = nil }, "parameters.calls: at least one call"},
		{"21 calls", func(b *BatchExecution) { b.Calls = calls(21) },
			"parameters.calls: 21 calls, more than the gas-station delegate's limit of 20"},
		{
			"a negative value",
			func(b *BatchExecution) { b.Calls[0].Value = big.NewInt(-1) },
			"parameters.calls[0].value",
		},
		{"a value above uint256", func(b *BatchExecution) { b.Calls[0].Value = tooLarge }, "parameters.calls[0].value"},
		{"no chain id", func(b *BatchExecution) { b.ChainID = nil }, "chain id"},
		{"a nonce above uint128", func(b *BatchExecution) { b.Nonce = new(big.Int).Lsh(big.NewInt(1), 128) },
			"gasStationNonce"},
		{"no nonce", func(b *BatchExecution) { b.Nonce = nil }, "gasStationNonce"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := valid()
			tt.change(&b)
			_, err := b.Digest()
			if !errors.Is(err, ErrInvalidBatch) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Digest: %v, want ErrInvalidBatch naming %q", err, tt.want)
			}
			sig := make([]byte, 65)
			sig[64] = 27
			if _, err := b.ExecuteBatchCalldata(sig); !errors.Is(err, ErrInvalidBatch) {
				t.Fatalf("ExecuteBatchCalldata: %v, want ErrInvalidBatch", err)
			}
		})
	}
	b := valid()
	b.Calls = calls(MaxBatchCalls)
	if _, err := b.Digest(); err != nil {
		t.Fatalf("a batch of exactly %d calls: %v", MaxBatchCalls, err)
	}
}

func TestExecuteBatchCalldataRefusesSignatures(t *testing.T) {
	b := BatchExecution{ChainID: big.NewInt(1), Nonce: big.NewInt(0), Calls: []BatchCall{{}}}
	good := make([]byte, 65)
	good[64] = 28
	highS := bytes.Clone(good)
	copy(highS[32:64], bytes.Repeat([]byte{0xff}, 32))
	for name, sig := range map[string][]byte{
		"64 bytes":    good[:64],
		"66 bytes":    append(bytes.Clone(good), 0),
		"v 0":         append(bytes.Clone(good[:64]), 0),
		"v 1":         append(bytes.Clone(good[:64]), 1),
		"s high half": highS,
	} {
		if _, err := b.ExecuteBatchCalldata(sig); !errors.Is(err, ErrInvalidBatch) ||
			!strings.Contains(err.Error(), "signature") {
			t.Errorf("%s: %v, want a refusal naming the signature", name, err)
		}
	}
	if _, err := b.ExecuteBatchCalldata(good); err != nil {
		t.Errorf("a well-formed signature: %v", err)
	}
}

func TestDelegationCode(t *testing.T) {
	delegate := common.HexToAddress("0x89abfCa968f0FC2f00B64A484B78b28d1a8AE9A5")
	code := DelegationCode(delegate)
	if got := hex.EncodeToString(code); got != "ef010089abfca968f0fc2f00b64a484b78b28d1a8ae9a5" {
		t.Fatalf("delegation code %s", got)
	}
	if d, ok := DelegatedTo(code); !ok || d != delegate {
		t.Fatalf("DelegatedTo(its own code) = %x, %v", d, ok)
	}
	notDelegations := [][]byte{
		nil,
		code[:22],
		append(bytes.Clone(code), 0),
		append([]byte{0xef, 0x01, 0x01}, code[3:]...),
	}
	for _, c := range notDelegations {
		if _, ok := DelegatedTo(c); ok {
			t.Errorf("DelegatedTo(%x) reported a delegation", c)
		}
	}
}

func TestDelegateRevertReason(t *testing.T) {
	contract := delegateABI(t)
	if len(contract.Errors) != len(delegateErrors) {
		t.Fatalf(
			"the contract declares %d errors, DelegateRevertReason knows %d",
			len(contract.Errors),
			len(delegateErrors),
		)
	}
	for name, e := range contract.Errors {
		if got := DelegateRevertReason(e.ID[:4]); got != name {
			t.Errorf("DelegateRevertReason(%x) = %q, want %q", e.ID[:4], got, name)
		}
	}
	notSelf := contract.Errors["NotSelf"].ID
	for _, data := range [][]byte{nil, {0x08, 0xc3, 0x79, 0xa0}, append(bytes.Clone(notSelf[:4]), 0)} {
		if got := DelegateRevertReason(data); got != "" {
			t.Errorf("DelegateRevertReason(%x) = %q, want none", data, got)
		}
	}
}
