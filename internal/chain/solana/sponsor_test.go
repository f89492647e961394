package solana

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/costtest"
)

// key is a test public key filled with b.
func key(b byte) [32]byte {
	var k [32]byte
	for i := range k {
		k[i] = b
	}
	return k
}

// buildTx serializes a transaction with zeroed signature slots (an encoder written apart from
// Sponsor's, so the tests do not check the rewrite against itself).
func buildTx(v0 bool, header [3]byte, keys [][32]byte, instrs []Instruction) []byte {
	var b []byte
	b = append(b, compactU16(int(header[0]))...)
	b = append(b, make([]byte, 64*int(header[0]))...)
	if v0 {
		b = append(b, 0x80)
	}
	b = append(b, header[:]...)
	b = append(b, compactU16(len(keys))...)
	for _, k := range keys {
		b = append(b, k[:]...)
	}
	b = append(b, bytes.Repeat([]byte{0x42}, 32)...)
	b = append(b, compactU16(len(instrs))...)
	for _, in := range instrs {
		b = append(b, in.ProgramIDIndex)
		b = append(b, compactU16(len(in.Accounts))...)
		b = append(b, in.Accounts...)
		b = append(b, compactU16(len(in.Data))...)
		b = append(b, in.Data...)
	}
	if v0 {
		b = append(b, 0)
	}
	return b
}

func transferData(lamports uint64) []byte {
	d := binary.LittleEndian.AppendUint32(nil, systemTransfer)
	return binary.LittleEndian.AppendUint64(d, lamports)
}

func cbLimit(units uint32) []byte { return binary.LittleEndian.AppendUint32([]byte{2}, units) }
func cbPrice(micro uint64) []byte { return binary.LittleEndian.AppendUint64([]byte{3}, micro) }

var payer = key(0xfe)

// transferTx is user → recipient through the System Program, plus extra instructions whose
// programs are keys 3.. (extraKeys).
func transferTx(v0 bool, extraKeys [][32]byte, extra []Instruction) []byte {
	keys := append([][32]byte{key(1), key(2), systemProgramID}, extraKeys...)
	ins := append([]Instruction{{ProgramIDIndex: 2, Accounts: []uint8{0, 1}, Data: transferData(1000)}}, extra...)
	return buildTx(v0, [3]byte{1, 0, 1 + byte(len(extraKeys))}, keys, ins)
}

func TestSponsorRewritesAndPrices(t *testing.T) {
	ata := Instruction{ProgramIDIndex: 3, Accounts: []uint8{0, 1, 0, 2}, Data: []byte{1}}
	cases := []struct {
		name       string
		tx         []byte
		rent       bool
		fee, rentL uint64
		funded     []int
		refused    string
	}{
		{name: "legacy transfer", tx: transferTx(false, nil, nil), fee: 10_000},
		{name: "v0 transfer without lookups", tx: transferTx(true, nil, nil), fee: 10_000},
		{name: "priority fee with a limit", tx: transferTx(false, [][32]byte{computeBudgetProgramID},
			[]Instruction{{ProgramIDIndex: 3, Data: cbLimit(300_000)}, {ProgramIDIndex: 3, Data: cbPrice(1_000_000)}}),
			fee: 10_000 + 300_000},
		{
			name: "priority fee at the default limit, rounded up",
			tx: transferTx(false, [][32]byte{computeBudgetProgramID},
				[]Instruction{{ProgramIDIndex: 3, Data: cbPrice(3)}}),
			fee: 10_000 + 1,
		}, // 3 µlamports × 200,000 units = 0.6 lamports → 1
		{name: "precompile signatures count", tx: transferTx(false, [][32]byte{ed25519ProgramID},
			[]Instruction{{ProgramIDIndex: 3, Data: []byte{2, 0}}}), fee: 4 * 5000},
		{name: "ATA create funded by the sponsor", rent: true,
			tx: transferTx(false, [][32]byte{ataProgramID}, []Instruction{ata}), fee: 10_000,
			rentL: TokenAccountRentLamports, funded: []int{1}},
		{name: "ATA create with rent sponsorship off", tx: transferTx(false, [][32]byte{ataProgramID},
			[]Instruction{ata}), refused: "rent sponsorship is off"},
		{name: "System CreateAccount", rent: true, tx: transferTx(false, nil, []Instruction{{ProgramIDIndex: 2,
			Accounts: []uint8{0, 1}, Data: make([]byte, 52)}}), refused: "CreateAccount"},
		{name: "fee payer already present", tx: buildTx(false, [3]byte{1, 0, 1},
			[][32]byte{key(1), payer, systemProgramID},
			[]Instruction{{ProgramIDIndex: 2, Accounts: []uint8{0, 1}, Data: transferData(1)}}),
			refused: "already in the message"},
		{name: "address lookup tables", tx: lookupsTx(1), refused: "address lookup tables"},
		{name: "repeated compute unit price", tx: transferTx(false, [][32]byte{computeBudgetProgramID},
			[]Instruction{{ProgramIDIndex: 3, Data: cbPrice(1)}, {ProgramIDIndex: 3, Data: cbPrice(1)}}),
			refused: "repeated SetComputeUnitPrice"},
		{name: "too large once rewritten", tx: transferTx(false, nil, []Instruction{{ProgramIDIndex: 2,
			Data: bytes.Repeat([]byte{0xaa}, 1232-219)}}), refused: "at most 1232"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx, err := ParseTransaction(c.tx)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Sponsor(tx, payer, c.rent)
			if c.refused != "" {
				if !errors.Is(err, ErrSponsor) || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("err = %v, want a refusal saying %q", err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Fee != c.fee || s.Rent != c.rentL || len(s.FundedCreates) != len(c.funded) {
				t.Fatalf(
					"fee %d rent %d funded %v; want %d %d %v",
					s.Fee,
					s.Rent,
					s.FundedCreates,
					c.fee,
					c.rentL,
					c.funded,
				)
			}
			checkRewrite(t, tx, s, payer)
		})
	}
}

// checkRewrite holds the rewrite's promises: the payer is signer 0, every other account keeps its
// key and roles, every instruction names the same keys (an ATA create's funder: the payer), the
// blockhash and data are unchanged, and the result re-parses.
func checkRewrite(t *testing.T, before *Tx, s *Sponsored, payer [32]byte) {
	t.Helper()
	after, err := ParseTransaction(s.Unsigned)
	if err != nil {
		t.Fatalf("the rewrite does not parse: %v", err)
	}
	if after.staticKeys[0] != payer || after.numSigs != before.numSigs+1 ||
		after.header.NumRequiredSignatures != before.header.NumRequiredSignatures+1 ||
		after.header.NumReadonlySignedAccounts != before.header.NumReadonlySignedAccounts ||
		after.header.NumReadonlyUnsignedAccounts != before.header.NumReadonlyUnsignedAccounts ||
		after.blockhash != before.blockhash || after.versioned != before.versioned ||
		len(after.instrs) != len(before.instrs) || len(after.staticKeys) != len(before.staticKeys)+1 {
		t.Fatalf("header, keys or blockhash changed: %+v", after.header)
	}
	if !bytes.Equal(
		s.Unsigned[:1+64*after.numSigs],
		append([]byte{byte(after.numSigs)}, make([]byte, 64*after.numSigs)...),
	) {
		t.Fatal("signature slots not zeroed")
	}
	ra, rb := after.resolveAccounts(), before.resolveAccounts()
	for i := range rb.accounts {
		a, b := ra.accounts[i+1], rb.accounts[i]
		if a.key != b.key || a.signer != b.signer || a.writable != b.writable {
			t.Fatalf("account %d changed role: %+v → %+v", i, b, a)
		}
	}
	funded := map[int]bool{}
	for _, i := range s.FundedCreates {
		funded[i] = true
	}
	for i, in := range before.instrs {
		out := after.instrs[i]
		if after.staticKeys[out.ProgramIDIndex] != before.staticKeys[in.ProgramIDIndex] ||
			!bytes.Equal(out.Data, in.Data) || len(out.Accounts) != len(in.Accounts) {
			t.Fatalf("instruction %d changed", i)
		}
		for j := range in.Accounts {
			want := before.staticKeys[in.Accounts[j]]
			if j == 0 && funded[i] {
				want = payer
			}
			if after.staticKeys[out.Accounts[j]] != want {
				t.Fatalf("instruction %d account %d points elsewhere", i, j)
			}
			if out.Accounts[j] == 0 && !(j == 0 && funded[i]) {
				t.Fatalf("instruction %d names the fee payer", i)
			}
		}
	}
}

func TestSponsorKeepsTheVectors(t *testing.T) {
	for _, v := range loadVectors(t).Vectors {
		tx, err := ParseTransaction(mustHex(t, v.UnsignedHex))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Sponsor(tx, payer, false)
		if len(tx.lookups) > 0 {
			if !errors.Is(err, ErrSponsor) {
				t.Fatalf("%s: lookups not refused: %v", v.Name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		checkRewrite(t, tx, s, payer)
	}
}

func TestVerifySignatures(t *testing.T) {
	seed := func(b byte) ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32)) }
	user, fp := seed(1), seed(2)
	var uk, pk [32]byte
	copy(uk[:], user.Public().(ed25519.PublicKey))
	copy(pk[:], fp.Public().(ed25519.PublicKey))
	tx, err := ParseTransaction(buildTx(false, [3]byte{1, 0, 1}, [][32]byte{uk, key(2), systemProgramID},
		[]Instruction{{ProgramIDIndex: 2, Accounts: []uint8{0, 1}, Data: transferData(5)}}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Sponsor(tx, pk, false)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := ParseTransaction(s.Unsigned)
	if st.NumSignatures() != 2 || st.Signer(0) != base58.Encode(pk[:]) || st.Signer(1) != base58.Encode(uk[:]) {
		t.Fatal("the fee payer then the user expected")
	}
	raw, _ := st.WithSignature(0, ed25519.Sign(fp, st.Message()))
	half, _ := ParseTransaction(raw)
	if err := half.VerifySignatures(); err == nil || !strings.Contains(err.Error(), "signature 1") {
		t.Fatalf("a missing user signature verified: %v", err)
	}
	raw, _ = half.WithSignature(1, ed25519.Sign(user, st.Message()))
	full, _ := ParseTransaction(raw)
	if err := full.VerifySignatures(); err != nil {
		t.Fatal(err)
	}
	raw[10] ^= 1
	bad, _ := ParseTransaction(raw)
	if err := bad.VerifySignatures(); err == nil {
		t.Fatal("a corrupted fee payer signature verified")
	}
}

// FuzzSponsor rewrites arbitrary transactions: whatever Sponsor accepts re-parses and keeps every
// instruction's accounts pointing to the same keys; the cost stays linear.
func FuzzSponsor(f *testing.F) {
	for _, v := range loadVectors(f).Vectors {
		f.Add(mustHex(f, v.UnsignedHex), true)
	}
	f.Add(transferTx(true, [][32]byte{ataProgramID}, []Instruction{{ProgramIDIndex: 3, Accounts: []uint8{0, 1, 0, 2}}}),
		true)
	f.Add(transferTx(false, [][32]byte{computeBudgetProgramID},
		[]Instruction{{ProgramIDIndex: 3, Data: cbLimit(1)}, {ProgramIDIndex: 3, Data: cbPrice(1 << 62)}}), false)
	f.Add(refsTx(3, 5, 2), false)
	f.Fuzz(func(t *testing.T, b []byte, rent bool) {
		tx, err := ParseTransaction(b)
		if err != nil {
			return
		}
		var s *Sponsored
		costtest.Budget(t, b, 512, 64<<10, func() { s, err = Sponsor(tx, payer, rent) })
		if err != nil {
			if !errors.Is(err, ErrSponsor) {
				t.Fatalf("a refusal without ErrSponsor: %v", err)
			}
			return
		}
		if s.Fee < LamportsPerSignature*uint64(tx.numSigs+1) {
			t.Fatalf("fee %d below the base fee", s.Fee)
		}
		checkRewrite(t, tx, s, payer)
	})
}

// TestSponsorCost: the rewrite's cost grows linearly with the transaction, whatever its shape.
func TestSponsorCost(t *testing.T) {
	run := func(in []byte) {
		if tx, err := ParseTransaction(in); err == nil {
			_, _ = Sponsor(tx, payer, true)
		}
	}
	shapes := []costtest.Shape{
		{Name: "account references", Make: func(n int) []byte { return refsTx(4, n, 0) }},
		{Name: "instructions", Make: func(n int) []byte { return refsTx(n/4, 1, 0) }},
		{Name: "instruction data", Make: func(n int) []byte { return refsTx(1, 1, 4*n) }},
	}
	for i := range shapes {
		if tx, err := ParseTransaction(shapes[i].Make(4 * 50)); err != nil {
			t.Fatalf("%s: %v", shapes[i].Name, err)
		} else if _, err := Sponsor(tx, payer, true); err != nil {
			t.Fatalf("%s: %v", shapes[i].Name, err)
		}
		shapes[i].Run, shapes[i].PerByte = run, 128
	}
	costtest.Linear(t, 50, shapes...)
}
