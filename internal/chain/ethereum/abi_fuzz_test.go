package ethereum

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"

	"github.com/latchkey/latchkey/internal/costtest"
)

// decodeAllocPerByte and decodeAllocFixed bound what one DecodeCall allocates: parsing a small
// ABI (the fixed part) and, per byte of calldata, its values built three times over (by
// go-ethereum, as policy values, and as hex for bytes) within MaxABIValuesPerWord per word.
const (
	decodeAllocPerByte = 512
	decodeAllocFixed   = 256 << 10
)

// fuzzABITypes are argument types whose decoding walks offsets, lengths, fixed arrays and tuples.
var fuzzABITypes = []string{
	`{"name":"a","type":"uint256[][][]"}`,
	`{"name":"a","type":"string[]"}`,
	`{"name":"a","type":"bytes"},{"name":"b","type":"uint8"}`,
	`{"name":"a","type":"uint256[2][]"},{"name":"b","type":"string[2]"}`,
	`{"name":"a","type":"uint8[3][2]"},{"name":"b","type":"bool"},{"name":"c","type":"int16"}`,
	`{"name":"a","type":"tuple[]","components":[{"name":"x","type":"address"},{"name":"y","type":"bytes"}]}`,
	`{"name":"a","type":"tuple","components":[{"name":"x","type":"tuple[]","components":[` +
		`{"name":"p","type":"uint256"},{"name":"q","type":"string"}]},{"name":"y","type":"bool"}]}`,
	`{"name":"a","type":"tuple[2]","components":[{"name":"x","type":"uint64"},{"name":"y","type":"bytes32"}]}`,
	`{"name":"a","type":"tuple[]","components":[]}`,
	`{"name":"a","type":"tuple[3][]","components":[{"name":"x","type":"uint8"}]},{"name":"b","type":"string"}`,
	`{"name":"a","type":"bytes[][]"},{"name":"b","type":"function"}`,
}

// FuzzDecodeCallShapes: for every argument shape, DecodeCall answers within its allocation
// budget, and the size check walks the calldata as go-ethereum does: when it finds the calldata
// malformed, go-ethereum does too (it never refuses what go-ethereum decodes, except for size).
func FuzzDecodeCallShapes(f *testing.F) {
	for i := range fuzzABITypes {
		f.Add(uint8(i), []byte{})
		f.Add(uint8(i), append(abiWord(32), abiWord(2)...))
	}
	f.Add(uint8(0), abiSharedNested(3, 4)[4:])
	f.Add(uint8(1), abiSharedStrings(4, 40)[4:])
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		abiJSON := []byte(`[{"type":"function","name":"f","inputs":[` +
			fuzzABITypes[int(which)%len(fuzzABITypes)] + `],"outputs":[]}]`)
		parsed, err := abi.JSON(bytes.NewReader(abiJSON))
		if err != nil {
			t.Fatalf("ABI %s: %v", abiJSON, err)
		}
		m := parsed.Methods["f"]
		data := append(append([]byte(nil), m.ID...), args...)
		costtest.Budget(t, data, decodeAllocPerByte, decodeAllocFixed, func() { _, _ = DecodeCall(abiJSON, data) })

		sizeErr := checkDecodedSize(m.Inputs, args)
		if errors.Is(sizeErr, errABITooManyValues) {
			return
		}
		_, gethErr := m.Inputs.UnpackValues(args)
		if sizeErr != nil && gethErr == nil {
			t.Fatalf("%s: the size check refused %x (%v), go-ethereum decodes it", m.Sig, args, sizeErr)
		}
		if _, err := DecodeCall(abiJSON, data); (err == nil) != (gethErr == nil) {
			t.Fatalf("%s %x: DecodeCall error %v, go-ethereum %v", m.Sig, args, err, gethErr)
		}
	})
}

// TestDecodedSizeAgreesWithGoEthereum is FuzzDecodeCallShapes's second check over calldata that
// random bytes rarely make: words that are small offsets, small lengths, or zero, so that most
// inputs follow offsets a few levels deep. The size check must fail exactly where go-ethereum
// fails for the calldata's shape (go-ethereum may also fail on a value, such as a bool of 2).
func TestDecodedSizeAgreesWithGoEthereum(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 9))
	agreeOK, agreeErr := 0, 0
	for i := 0; i < 40000; i++ {
		typ := fuzzABITypes[i%len(fuzzABITypes)]
		parsed, err := abi.JSON(bytes.NewReader([]byte(`[{"type":"function","name":"f","inputs":[` + typ + `]}]`)))
		if err != nil {
			t.Fatal(err)
		}
		m := parsed.Methods["f"]
		words := 1 + rng.IntN(24)
		args := make([]byte, 0, 32*words)
		for w := 0; w < words; w++ {
			switch rng.IntN(4) {
			case 0:
				args = append(args, abiWord(uint64(32*rng.IntN(words+1)))...)
			case 1:
				args = append(args, abiWord(uint64(rng.IntN(4)))...)
			case 2:
				args = append(args, abiWord(0)...)
			default:
				b := make([]byte, 32)
				for k := range b {
					b[k] = byte(rng.Uint32())
				}
				args = append(args, b...)
			}
		}
		sizeErr := checkDecodedSize(m.Inputs, args)
		if errors.Is(sizeErr, errABITooManyValues) {
			continue
		}
		_, gethErr := m.Inputs.UnpackValues(args)
		if sizeErr != nil && gethErr == nil {
			t.Fatalf("%s: the size check refused %x (%v), go-ethereum decodes it", m.Sig, args, sizeErr)
		}
		if sizeErr == nil && gethErr == nil {
			agreeOK++
		} else if sizeErr != nil {
			agreeErr++
		}
	}
	if agreeOK < 1000 || agreeErr < 1000 {
		t.Fatalf("the generator is too one-sided: %d decoded, %d refused by both", agreeOK, agreeErr)
	}
}
