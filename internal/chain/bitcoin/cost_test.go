package bitcoin

import (
	"bytes"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/psbt"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"

	"github.com/latchkey/latchkey/internal/costtest"
)

// packetBytes serializes a PSBT of tx whose inputs fill sets up.
func packetBytes(t testing.TB, tx *wire.MsgTx, fill func(p *psbt.Packet)) []byte {
	p, err := psbt.NewFromUnsignedTx(tx)
	if err != nil {
		t.Fatal(err)
	}
	if fill != nil {
		fill(p)
	}
	var b bytes.Buffer
	if err := p.Serialize(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// legacyInputs is a PSBT with n P2PKH inputs of the key, each spending its own small previous
// transaction: legacy signature hashes each cover the whole transaction.
func legacyInputs(t testing.TB, key testKey, n int) []byte {
	own, _ := scriptsFor(key.pub())
	tx := wire.NewMsgTx(2)
	prevs := make([]*wire.MsgTx, n)
	for i := range prevs {
		prev := wire.NewMsgTx(2)
		prev.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: uint32(i)}})
		prev.AddTxOut(wire.NewTxOut(10_000, own.p2pkh))
		prevs[i] = prev
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: prev.TxHash()}, Sequence: 0xffffffff})
	}
	tx.AddTxOut(wire.NewTxOut(int64(n)*9_000, own.p2wpkh))
	return packetBytes(t, tx, func(p *psbt.Packet) {
		for i := range p.Inputs {
			p.Inputs[i].NonWitnessUtxo = prevs[i]
		}
	})
}

// segwitInputs is a PSBT with n P2WPKH inputs of the key and outputs outputs.
func segwitInputs(t testing.TB, key testKey, n, outputs int, script []byte) []byte {
	own, _ := scriptsFor(key.pub())
	tx := wire.NewMsgTx(2)
	for i := 0; i < n; i++ {
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: uint32(i)}, Sequence: 0xffffffff})
	}
	for i := 0; i < outputs; i++ {
		tx.AddTxOut(wire.NewTxOut(1_000, script))
	}
	return packetBytes(t, tx, func(p *psbt.Packet) {
		for i := range p.Inputs {
			p.Inputs[i].WitnessUtxo = wire.NewTxOut(100_000, own.p2wpkh)
		}
	})
}

// TestPSBTCost feeds ParsePSBT, the policy view and Sign the shapes of a PSBT that could cost
// more than its size: many legacy inputs of the key (each legacy signature hash covers the
// whole transaction), many inputs and outputs, long scripts, many unknown keys, and counts
// declared past the input.
func TestPSBTCost(t *testing.T) {
	key := newTestKey(0x11)
	own, _ := scriptsFor(key.pub())
	run := func(in []byte) {
		p, err := ParsePSBT(in)
		if err != nil {
			return
		}
		_ = p.PolicyView("mainnet")
		_, _, _ = p.Sign(key.pub(), "mainnet", key.ecdsa, key.schnorr)
	}
	run(segwitInputs(t, key, 1, 1, own.p2wpkh)) // secp256k1's tables are built on first use
	costtest.Linear(t, 100,
		costtest.Shape{
			Name:    "many legacy inputs of the key", // each legacy signature hash reads the whole transaction
			Make:    func(n int) []byte { return legacyInputs(t, key, n) },
			Run:     run,
			PerByte: 128,
		},
		costtest.Shape{
			Name: "many legacy inputs past the hashing limit", // 1,000 and 4,000 inputs: refused
			Make: func(n int) []byte { return legacyInputs(t, key, 10*n) },
			Run:  run,
		},
		costtest.Shape{
			Name: "many segwit inputs of the key",
			Make: func(n int) []byte { return segwitInputs(t, key, n, 1, own.p2wpkh) },
			Run:  run,
			// Per input (76 bytes): two decodes (Sign works on a fresh one), a signature and its
			// verification, the policy view: about 1 KB.
			PerByte: 128,
		},
		costtest.Shape{
			Name: "many outputs",
			Make: func(n int) []byte { return segwitInputs(t, key, 1, 20*n, own.p2tr) },
			Run:  run,
		},
		costtest.Shape{
			Name: "long output scripts",
			Make: func(n int) []byte { return segwitInputs(t, key, 1, 4, make([]byte, 100*n)) },
			Run:  run,
		},
		costtest.Shape{
			Name: "many unknown keys",
			Make: func(n int) []byte {
				tx := wire.NewMsgTx(2)
				tx.AddTxIn(&wire.TxIn{Sequence: 0xffffffff})
				tx.AddTxOut(wire.NewTxOut(1_000, own.p2wpkh))
				return packetBytes(t, tx, func(p *psbt.Packet) {
					p.Inputs[0].WitnessUtxo = wire.NewTxOut(100_000, own.p2wpkh)
					for i := 0; i < 20*n; i++ {
						k := []byte{0xfc, byte(i), byte(i >> 8), byte(i >> 16)}
						p.Unknowns = append(p.Unknowns, &psbt.Unknown{Key: k, Value: []byte{1}})
						p.Inputs[0].Unknowns = append(p.Inputs[0].Unknowns, &psbt.Unknown{Key: k, Value: []byte{1}})
					}
				})
			},
			Run: run,
		},
		costtest.Shape{
			Name: "counts declared past the input",
			Make: func(n int) []byte {
				// An unsigned transaction claiming 2^32-1 inputs, then n KB of padding.
				huge := append([]byte{2, 0, 0, 0}, 0xfe, 0xff, 0xff, 0xff, 0xff)
				huge = append(huge, make([]byte, 1000*n)...)
				return append(kv([]byte("psbt\xff"), []byte{0}, huge), 0)
			},
			Run: run,
		},
	)
}

// TestLegacySigHasherMatchesTxscript: the one-serialization legacy hash is btcd's
// CalcSignatureHash with SIGHASH_ALL, for every input of transactions of several shapes.
func TestLegacySigHasherMatchesTxscript(t *testing.T) {
	key := newTestKey(0x11)
	own, _ := scriptsFor(key.pub())
	for _, shape := range []struct{ ins, outs int }{{1, 1}, {3, 2}, {300, 40}} {
		tx := wire.NewMsgTx(-7 + int32(shape.ins))
		tx.LockTime = 499_999_999 + uint32(shape.outs)
		for i := 0; i < shape.ins; i++ {
			tx.AddTxIn(&wire.TxIn{
				PreviousOutPoint: wire.OutPoint{Hash: [32]byte{byte(i), 1}, Index: uint32(i * 70_000)},
				SignatureScript:  bytes.Repeat([]byte{byte(i)}, i%3*40), // ignored by the hash
				Sequence:         uint32(0xfffffffd - i),
			})
		}
		for i := 0; i < shape.outs; i++ {
			tx.AddTxOut(wire.NewTxOut(int64(i)*1e8+546, bytes.Repeat([]byte{0x51}, i*11%300)))
		}
		l := newLegacySigHasher(tx)
		for i := range tx.TxIn {
			for _, code := range [][]byte{own.p2pkh, own.p2pk} {
				want, err := txscript.CalcSignatureHash(code, txscript.SigHashAll, tx, i)
				if err != nil {
					t.Fatal(err)
				}
				if got := l.sum(i, code); !bytes.Equal(got, want) {
					t.Fatalf("%d inputs, input %d: %x, txscript %x", shape.ins, i, got, want)
				}
			}
		}
	}
}

// TestPSBTLimits: the legacy hashing bound refuses before any signature, and a map over
// MaxMapEntries is refused before btcutil decodes it; a map at the limit parses.
func TestPSBTLimits(t *testing.T) {
	key := newTestKey(0x11)
	p, err := ParsePSBT(legacyInputs(t, key, 1000)) // 1,000 × 41 KB
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	counting := func(d [32]byte) ([]byte, error) { calls++; return key.ecdsa(d) }
	if _, _, err := p.Sign(key.pub(), "mainnet", counting, key.schnorr); err == nil ||
		!strings.Contains(err.Error(), "more than the 33554432 allowed") || calls != 0 {
		t.Fatalf("err = %v after %d signatures", err, calls)
	}
	if p, err = ParsePSBT(legacyInputs(t, key, 500)); err != nil {
		t.Fatal(err)
	}
	if _, n, err := p.Sign(key.pub(), "mainnet", key.ecdsa, key.schnorr); err != nil || n != 500 {
		t.Fatalf("500 legacy inputs: signed %d, %v", n, err)
	}
	own, _ := scriptsFor(key.pub())
	unknowns := func(n int) []byte {
		tx := wire.NewMsgTx(2)
		tx.AddTxIn(&wire.TxIn{Sequence: 0xffffffff})
		tx.AddTxOut(wire.NewTxOut(1_000, own.p2wpkh))
		return packetBytes(t, tx, func(p *psbt.Packet) {
			p.Inputs[0].WitnessUtxo = wire.NewTxOut(100_000, own.p2wpkh)
			for i := 0; i < n; i++ { // with witness_utxo, n+1 entries
				k := []byte{0xfc, byte(i), byte(i >> 8)}
				p.Inputs[0].Unknowns = append(p.Inputs[0].Unknowns, &psbt.Unknown{Key: k, Value: []byte{1}})
			}
		})
	}
	if _, err := ParsePSBT(unknowns(MaxMapEntries - 1)); err != nil {
		t.Fatalf("a map at the limit: %v", err)
	}
	if _, err := ParsePSBT(unknowns(MaxMapEntries)); err == nil ||
		!strings.Contains(err.Error(), "more than 1000 entries") {
		t.Fatalf("a map over the limit: %v", err)
	}
}
