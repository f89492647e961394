package ethereum

import (
	"bytes"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"

	"github.com/latchkey/latchkey/internal/costtest"
)

// eip712DomainOutputs is the return signature of ERC-5267's eip712Domain(), decoded by go-ethereum
// as the oracle of FuzzDecodeEIP712Domain.
var eip712DomainOutputs = func() abi.Arguments {
	parsed, err := abi.JSON(strings.NewReader(`[{"type":"function","name":"eip712Domain","inputs":[],"outputs":[
		{"type":"bytes1"},{"type":"string"},{"type":"string"},{"type":"uint256"},{"type":"address"},
		{"type":"bytes32"},{"type":"uint256[]"}]}]`))
	if err != nil {
		panic(err)
	}
	return parsed.Methods["eip712Domain"].Outputs
}()

func encodeDomain(t testing.TB, d DelegateDomain) []byte {
	t.Helper()
	ext := d.Extensions
	if ext == nil {
		ext = []*big.Int{}
	}
	b, err := eip712DomainOutputs.Pack([1]byte{d.Fields}, d.Name, d.Version, d.ChainID,
		common.Address(d.VerifyingContract), d.Salt, ext)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeEIP712DomainOfTheDelegate(t *testing.T) {
	v := loadGasStationVectors(t)
	d, err := DecodeEIP712Domain(unhex(t, v.DomainAnswer.Answer))
	if err != nil {
		t.Fatal(err)
	}
	chainID, delegate := decimal(t, v.DomainAnswer.ChainID), common.HexToAddress(v.DomainAnswer.Delegate)
	if d.Fields != 0x0f || d.Name != "TKGasDelegate" || d.Version != "1.1" || d.ChainID.Cmp(chainID) != 0 ||
		d.VerifyingContract != delegate || d.Salt != [32]byte{} || len(d.Extensions) != 0 {
		t.Fatalf("decoded %+v", d)
	}
	if err := d.CheckDelegate(chainID, delegate); err != nil {
		t.Fatalf("the delegate's own answer fails the start-up check: %v", err)
	}
	if !bytes.Equal(encodeDomain(t, *d), unhex(t, v.DomainAnswer.Answer)) {
		t.Fatal("go-ethereum encodes the decoded domain differently from viem")
	}
}

func TestCheckDelegateRefusals(t *testing.T) {
	chainID, delegate := big.NewInt(11155111), common.HexToAddress("0x89abfCa968f0FC2f00B64A484B78b28d1a8AE9A5")
	good := func() DelegateDomain {
		return DelegateDomain{Fields: 0x0f, Name: DelegateDomainName, Version: DelegateDomainVersion,
			ChainID: big.NewInt(11155111), VerifyingContract: delegate}
	}
	tests := []struct {
		name   string
		change func(*DelegateDomain)
		want   string
	}{
		{"another name", func(d *DelegateDomain) { d.Name = "Other" }, `domain "Other"`},
		{"another version", func(d *DelegateDomain) { d.Version = "1" }, `version "1"`},
		{"another chain", func(d *DelegateDomain) { d.ChainID = big.NewInt(1) }, "chain id 1"},
		{"another contract", func(d *DelegateDomain) { d.VerifyingContract[0] ^= 1 }, "verifyingContract"},
		{"a salt field", func(d *DelegateDomain) { d.Fields = 0x1f }, "fields are 0x1f"},
		{"a salt value", func(d *DelegateDomain) { d.Salt[0] = 1 }, "salt"},
		{"extensions", func(d *DelegateDomain) { d.Extensions = []*big.Int{big.NewInt(1)} }, "extensions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := good()
			tt.change(&d)
			decoded, err := DecodeEIP712Domain(encodeDomain(t, d))
			if err != nil {
				t.Fatal(err)
			}
			err = decoded.CheckDelegate(chainID, delegate)
			if !errors.Is(err, ErrInvalidDelegateDomain) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%v, want ErrInvalidDelegateDomain naming %q", err, tt.want)
			}
		})
	}
}

func TestDecodeEIP712DomainRefusals(t *testing.T) {
	answer := encodeDomain(t, DelegateDomain{Fields: 0x0f, Name: "TKGasDelegate", Version: "1.1",
		ChainID: big.NewInt(1)})
	set := func(at int, b ...byte) []byte {
		c := bytes.Clone(answer)
		copy(c[at:], b)
		return c
	}
	word := func(v uint64) []byte { w := uintWord(v); return w[:] }
	tests := []struct {
		name   string
		answer []byte
		want   string
	}{
		{"empty", nil, "shorter than its 7-word head"},
		{"cut in the head", answer[:200], "shorter than its 7-word head"},
		{"cut in a string", answer[:len(answer)-40], "runs past the end"},
		{"too large", append(bytes.Clone(answer), make([]byte, maxDomainAnswer)...), "more than 4096"},
		{"fields not a bytes1", set(1, 1), "fields: not a bytes1"},
		{"name offset inside the head", set(32, word(32)...), "name: offset outside"},
		{"name offset past the end", set(32, word(1<<20)...), "name: offset outside"},
		{"name offset unaligned", set(32, word(0xe1)...), "name: offset outside"},
		{"version length huge", set(0x120, word(1<<40)...), "version: length outside"},
		{"address not padded", set(4*32, 1), "verifyingContract: not an address"},
		{"extensions offset outside", set(6*32, word(4096)...), "extensions: offset outside"},
		{"name padding not zero", set(0xe0+32+20, 1), "name: padding not zero"},
		{"name not UTF-8", set(0xe0+32, 0xff), "name: not UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeEIP712Domain(tt.answer)
			if !errors.Is(err, ErrInvalidDelegateDomain) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%v, want ErrInvalidDelegateDomain naming %q", err, tt.want)
			}
		})
	}
	long := encodeDomain(t, DelegateDomain{Name: strings.Repeat("n", maxDomainString+1), ChainID: big.NewInt(1)})
	if _, err := DecodeEIP712Domain(long); err == nil || !strings.Contains(err.Error(), "more than 256") {
		t.Errorf("a %d-byte name: %v", maxDomainString+1, err)
	}
	ext := make([]*big.Int, maxDomainExtensions+1)
	for i := range ext {
		ext[i] = big.NewInt(int64(i))
	}
	many := encodeDomain(t, DelegateDomain{ChainID: big.NewInt(1), Extensions: ext})
	if _, err := DecodeEIP712Domain(many); err == nil || !strings.Contains(err.Error(), "extensions") {
		t.Errorf("%d extensions: %v", maxDomainExtensions+1, err)
	}
}

// FuzzDecodeEIP712Domain: the answer comes from an RPC node. Decoding allocates within a fixed
// budget plus a few bytes per input byte, and whatever it accepts go-ethereum decodes to the same
// values (it may refuse more: padding, alignment, UTF-8, sizes).
func FuzzDecodeEIP712Domain(f *testing.F) {
	v := loadGasStationVectors(f)
	seed := unhex(f, v.DomainAnswer.Answer)
	f.Add(seed)
	f.Add(seed[:7*32])
	f.Add(encodeDomain(f, DelegateDomain{Name: "é", Version: strings.Repeat("v", 64), ChainID: big.NewInt(1),
		Extensions: []*big.Int{big.NewInt(1), big.NewInt(2)}}))
	f.Fuzz(func(t *testing.T, answer []byte) {
		var d *DelegateDomain
		var err error
		costtest.Budget(t, answer, 4, 4<<10, func() { d, err = DecodeEIP712Domain(answer) })
		if err != nil {
			if !errors.Is(err, ErrInvalidDelegateDomain) {
				t.Fatalf("an error that is not ErrInvalidDelegateDomain: %v", err)
			}
			return
		}
		values, gethErr := eip712DomainOutputs.UnpackValues(answer)
		if gethErr != nil {
			t.Fatalf("accepted %x, go-ethereum refuses it: %v", answer, gethErr)
		}
		ext := values[6].([]*big.Int)
		if values[0].([1]byte)[0] != d.Fields || values[1].(string) != d.Name || values[2].(string) != d.Version ||
			values[3].(*big.Int).Cmp(d.ChainID) != 0 || values[4].(common.Address) != d.VerifyingContract ||
			values[5].([32]byte) != d.Salt || len(ext) != len(d.Extensions) {
			t.Fatalf("decoded %+v, go-ethereum %v", d, values)
		}
		for i := range ext {
			if ext[i].Cmp(d.Extensions[i]) != 0 {
				t.Fatalf("extension %d: %s, go-ethereum %s", i, d.Extensions[i], ext[i])
			}
		}
	})
}
