package bitcoin

import (
	"bytes"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/btcutil/psbt"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
)

// kv appends one key-value pair.
func kv(b []byte, key, val []byte) []byte {
	var w bytes.Buffer
	w.Write(b)
	_ = wire.WriteVarInt(&w, 0, uint64(len(key)))
	w.Write(key)
	_ = wire.WriteVarInt(&w, 0, uint64(len(val)))
	w.Write(val)
	return w.Bytes()
}

func TestPrewalkRefusesCountsTheBytesCannotHold(t *testing.T) {
	magic := []byte("psbt\xff")
	// An unsigned transaction claiming 2^32-1 inputs in a few bytes.
	hugeIn := append([]byte{2, 0, 0, 0}, 0xfe, 0xff, 0xff, 0xff, 0xff)
	// A non_witness_utxo claiming four million witness items for its one input.
	var prev []byte
	prev = append(prev, 2, 0, 0, 0, 0x00, 0x01, 1)
	prev = append(prev, make([]byte, 36)...)
	prev = append(prev, 0, 0xff, 0xff, 0xff, 0xff, 1)
	prev = append(prev, make([]byte, 8)...)
	prev = append(prev, 0)
	prev = append(prev, 0xfe, 0x00, 0x09, 0x3d, 0x00) // 4,000,000 items
	prev = append(prev, 0, 0, 0, 0)
	oneIn := append([]byte{2, 0, 0, 0, 1}, make([]byte, 36)...)
	oneIn = append(oneIn, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0)
	cases := map[string]struct {
		b    []byte
		want string
	}{
		"huge input count": {append(kv(magic, []byte{0}, hugeIn), 0), "cannot fit"},
		"huge witness count": {
			append(append(kv(magic, []byte{0}, oneIn), 0), append(kv(nil, []byte{0}, prev), 0)...), "cannot fit"},
		"oversized unsigned transaction": {
			append(kv(magic, []byte{0}, make([]byte, MaxUnsignedTxSize+1)), 0),
			"at most",
		},
		"no unsigned transaction": {append(kv(magic, []byte{0xfc}, []byte{1}), 0), "no unsigned transaction"},
		"key past the end":        {append(bytes.Clone(magic), 0x05, 0x00), "key"},
		"second unsigned transaction": {
			append(kv(kv(magic, []byte{0}, oneIn), []byte{0}, oneIn), 0, 0),
			"duplicate key",
		},
	}
	for name, c := range cases {
		_, err := ParsePSBT(c.b)
		t.Logf("%s: %v", name, err)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", name, err, c.want)
		}
	}
}

func TestSignsLegacyP2SHWrappingP2PKH(t *testing.T) {
	mine := newTestKey(0x11)
	var base string
	for _, v := range loadPSBTVectors(t).Vectors {
		if v.Name == "p2sh" {
			base = v.PSBTHex
		}
	}
	own, err := scriptsFor(mine.pub())
	if err != nil {
		t.Fatal(err)
	}
	b := modify(t, base, func(p *psbt.Packet) {
		in := &p.Inputs[0]
		in.RedeemScript = own.p2pkh
		in.NonWitnessUtxo.TxOut[0].PkScript = append(
			append([]byte{txscript.OP_HASH160, 20}, btcutil.Hash160(own.p2pkh)...),
			txscript.OP_EQUAL,
		)
		p.UnsignedTx.TxIn[0].PreviousOutPoint.Hash = in.NonWitnessUtxo.TxHash()
	})
	p, err := ParsePSBT(b)
	if err != nil {
		t.Fatal(err)
	}
	signed, n := mine.sign(t, p)
	if n != 1 {
		t.Fatalf("signed %d inputs", n)
	}
	tx := finalize(t, p, signed)
	verifyInputs(t, p, tx)
	if !bytes.Contains(signed, own.p2pkh) {
		t.Fatal("redeem script lost")
	}
}
