package solana

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"

	"github.com/mr-tron/base58"
)

// Sponsorship: a deployment's fee payer pays a transaction's fee by becoming its first signer.
// Sponsor rewrites the caller's message so that it is (docs/gas-station.md, "Solana"):
//
//   - header: NumRequiredSignatures + 1 (the read-only counts are unchanged, so every original
//     account keeps its signer and writable role);
//   - account keys: the fee payer prepended; every program and account index shifted by one, so
//     each instruction names the same keys as before;
//   - one more zeroed signature slot, first.
//
// The fee payer is named by no instruction, so no program can debit it, except, with rent
// sponsorship on, as the funder of an Associated Token Account Create/CreateIdempotent (the
// ATA program charges the rent-exempt minimum of the token account, a bounded amount).

// Well-known programs the sponsorship rules read.
var (
	computeBudgetProgramID = mustKey("ComputeBudget111111111111111111111111111111")
	ataProgramID           = mustKey("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL")
	ed25519ProgramID       = mustKey("Ed25519SigVerify111111111111111111111111111")
	secp256k1ProgramID     = mustKey("KeccakSecp256k11111111111111111111111111111")
	secp256r1ProgramID     = mustKey("Secp256r1SigVerify1111111111111111111111111")
)

// Fee and rent constants of the network (Agave's defaults).
const (
	// LamportsPerSignature is the base fee per signature, precompile signatures included.
	LamportsPerSignature = 5000
	// DefaultUnitsPerInstruction is the compute-unit limit the runtime assumes per instruction
	// (other than ComputeBudget's) when no SetComputeUnitLimit is given; MaxComputeUnits caps it.
	DefaultUnitsPerInstruction = 200_000
	MaxComputeUnits            = 1_400_000
	// TokenAccountRentLamports is the rent-exempt minimum of a 165-byte SPL token account at the
	// default rent: what one ATA Create costs its funder (Token-2022 accounts with extensions are
	// larger; the settled usage counts what was actually paid).
	TokenAccountRentLamports = 2_039_280
)

// System Program and ATA instruction discriminators the rules read.
const (
	systemCreateAccount         = 0
	systemCreateAccountWithSeed = 3
	ataCreate                   = 0
	ataCreateIdempotent         = 1
	cbSetComputeUnitLimit       = 2
	cbSetComputeUnitPrice       = 3
)

// ErrSponsor marks every refusal of Sponsor: the transaction cannot be rewritten safely.
var ErrSponsor = errors.New("solana: cannot sponsor this transaction")

func refuse(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrSponsor, fmt.Sprintf(format, a...))
}

// Sponsored is a rewritten, unsigned transaction and what it may cost the fee payer.
type Sponsored struct {
	// Unsigned is the full wire transaction, every signature slot zeroed, the fee payer first.
	Unsigned []byte
	// Fee is the most the network charges for it, in lamports: LamportsPerSignature for each
	// signature (precompile ones included) plus the priority fee, unit price × unit limit / 10^6
	// rounded up.
	Fee uint64
	// Rent is the most the fee payer funds as rent: TokenAccountRentLamports per ATA create it
	// was made the funder of (rent sponsorship on only).
	Rent uint64
	// FundedCreates lists the instructions whose funder became the fee payer.
	FundedCreates []int
}

// Sponsor rewrites t for the fee payer payer (see above). Refused, each with its reason:
// the payer already among the keys; v0 messages with address lookup tables (not supported
// yet); System CreateAccount/CreateAccountWithSeed (the caller chooses the lamports, so the
// sponsor funding them would be a transfer of its SOL); ATA creates while rentSponsorship is
// off; malformed or repeated ComputeBudget instructions (the runtime fails those); a result
// over the network's limits. It is linear in the transaction and allocates only its result.
func Sponsor(t *Tx, payer [pubkeySize]byte, rentSponsorship bool) (*Sponsored, error) {
	if len(t.lookups) > 0 {
		return nil, refuse("v0 messages with address lookup tables are not supported yet")
	}
	for _, k := range t.staticKeys {
		if k == payer {
			return nil, refuse("the fee payer %s is already in the message", base58.Encode(payer[:]))
		}
	}
	if len(t.staticKeys)+1 > MaxAccounts || t.header.NumRequiredSignatures == 255 {
		return nil, refuse("no room for the fee payer: the message already has %d accounts", len(t.staticKeys))
	}
	out := &Sponsored{}
	sigs := uint64(t.header.NumRequiredSignatures) + 1
	var limit, price *uint64
	others := uint64(0)
	funder := make([]bool, len(t.instrs))
	for i, in := range t.instrs {
		prog := t.staticKeys[in.ProgramIDIndex] // no lookups, so in range (sanitize)
		switch prog {
		case systemProgramID:
			if len(in.Data) >= 4 {
				switch binary.LittleEndian.Uint32(in.Data) {
				case systemCreateAccount, systemCreateAccountWithSeed:
					return nil, refuse("instruction %d creates an account with System Program "+
						"CreateAccount(WithSeed), whose lamports the caller chooses; the sponsor never funds it: "+
						"send it with sponsor false", i)
				}
			}
		case ataProgramID:
			if len(in.Data) == 0 || in.Data[0] == ataCreate || in.Data[0] == ataCreateIdempotent {
				if !rentSponsorship {
					return nil, refuse("instruction %d creates an associated token account, and rent "+
						"sponsorship is off on this network: create it first, or send with sponsor false", i)
				}
				if len(in.Accounts) == 0 {
					return nil, refuse("instruction %d: an associated token account create without accounts", i)
				}
				funder[i] = true
				out.FundedCreates = append(out.FundedCreates, i)
				out.Rent += TokenAccountRentLamports
			}
		case computeBudgetProgramID:
			if len(in.Data) == 0 {
				return nil, refuse("instruction %d: an empty ComputeBudget instruction", i)
			}
			switch in.Data[0] {
			case cbSetComputeUnitLimit:
				if len(in.Data) != 5 || limit != nil {
					return nil, refuse("instruction %d: a malformed or repeated SetComputeUnitLimit", i)
				}
				v := uint64(binary.LittleEndian.Uint32(in.Data[1:]))
				limit = &v
			case cbSetComputeUnitPrice:
				if len(in.Data) != 9 || price != nil {
					return nil, refuse("instruction %d: a malformed or repeated SetComputeUnitPrice", i)
				}
				v := binary.LittleEndian.Uint64(in.Data[1:])
				price = &v
			}
			continue
		case ed25519ProgramID, secp256k1ProgramID, secp256r1ProgramID:
			if len(in.Data) > 0 {
				sigs += uint64(in.Data[0])
			}
		}
		others++
	}
	units := min(others*DefaultUnitsPerInstruction, MaxComputeUnits)
	if limit != nil {
		units = min(*limit, MaxComputeUnits)
	}
	fee := new(big.Int).SetUint64(sigs * LamportsPerSignature)
	if price != nil {
		p := new(big.Int).Mul(new(big.Int).SetUint64(*price), new(big.Int).SetUint64(units))
		p.Add(p, big.NewInt(999_999))
		fee.Add(fee, p.Div(p, big.NewInt(1_000_000)))
	}
	if !fee.IsUint64() {
		return nil, refuse("the priority fee overflows")
	}
	out.Fee = fee.Uint64()
	out.Unsigned = t.sponsoredBytes(payer, funder)
	if len(out.Unsigned) > MaxTransactionSize {
		return nil, refuse("with the fee payer's key and signature the transaction is %d bytes; the network "+
			"accepts at most %d", len(out.Unsigned), MaxTransactionSize)
	}
	if _, err := ParseTransaction(out.Unsigned); err != nil {
		return nil, refuse("the rewritten transaction does not parse: %v", err)
	}
	return out, nil
}

// sponsoredBytes serializes the rewritten transaction: payer first, indexes shifted by one, and
// account 0 of each instruction marked in funder (an ATA create's funder) set to the payer.
func (t *Tx) sponsoredBytes(payer [pubkeySize]byte, funder []bool) []byte {
	var b bytes.Buffer
	n := int(t.header.NumRequiredSignatures) + 1
	b.Write(shortvec(n))
	b.Write(make([]byte, n*signatureSize))
	if t.versioned {
		b.WriteByte(0x80)
	}
	b.Write([]byte{byte(n), t.header.NumReadonlySignedAccounts, t.header.NumReadonlyUnsignedAccounts})
	b.Write(shortvec(len(t.staticKeys) + 1))
	b.Write(payer[:])
	for _, k := range t.staticKeys {
		b.Write(k[:])
	}
	b.Write(t.blockhash[:])
	b.Write(shortvec(len(t.instrs)))
	for i, in := range t.instrs {
		b.WriteByte(in.ProgramIDIndex + 1)
		b.Write(shortvec(len(in.Accounts)))
		for j, a := range in.Accounts {
			if j == 0 && funder[i] {
				b.WriteByte(0)
				continue
			}
			b.WriteByte(a + 1)
		}
		b.Write(shortvec(len(in.Data)))
		b.Write(in.Data)
	}
	if t.versioned {
		b.Write(shortvec(0))
	}
	return b.Bytes()
}

// shortvec encodes Solana's shortvec length (n < 2^16).
func shortvec(n int) []byte {
	var out []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

// NumSignatures is the number of signature slots.
func (t *Tx) NumSignatures() int { return t.numSigs }

// Signer returns the base58 address of required signer i.
func (t *Tx) Signer(i int) string { return base58.Encode(t.staticKeys[i][:]) }

// VerifySignatures checks every signature slot against its signer's key over the message:
// a sponsored transaction is sent only when each one holds.
func (t *Tx) VerifySignatures() error {
	msg := t.raw[t.msgOffset:]
	for i := 0; i < t.numSigs; i++ {
		sig := t.raw[t.sigOffset+i*signatureSize : t.sigOffset+(i+1)*signatureSize]
		if !ed25519.Verify(t.staticKeys[i][:], msg, sig) {
			return fmt.Errorf("solana: signature %d (signer %s) is missing or does not verify", i, t.Signer(i))
		}
	}
	return nil
}
