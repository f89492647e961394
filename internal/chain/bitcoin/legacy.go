package bitcoin

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"

	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
)

// MaxLegacySighashBytes bounds the bytes one Sign hashes for legacy (P2PKH, P2SH) signature
// hashes (docs/limits.md §5.3). Each legacy hash covers the whole transaction, so the work is
// the legacy inputs the key signs times the transaction's size, quadratic in the PSBT. A
// standard transaction is at most 100,000 bytes once signed, and each signed legacy input adds
// at least 107 bytes of signature script, so the largest product a relayable transaction can
// need is about 24 MB.
const MaxLegacySighashBytes = 32 << 20

// legacySigHasher computes SIGHASH_ALL legacy signature hashes for one transaction without
// serializing it again for each input: the transaction is serialized once with every input's
// script empty, and each hash reads it in three slices around the signed input, which alone
// carries its script code. The script codes signed here are the key's own P2PKH and P2PK
// scripts, which hold no OP_CODESEPARATOR and no signature to delete.
type legacySigHasher struct {
	tx      *wire.MsgTx
	head    []byte // version, input count
	blank   []byte // the inputs, each with an empty script
	offsets []int  // where input j starts in blank; offsets[len(inputs)] = len(blank)
	tail    []byte // output count, outputs, lock time, sighash type
	own     []byte // the signed input with its script code (scratch)
	h       hash.Hash
}

func newLegacySigHasher(tx *wire.MsgTx) *legacySigHasher {
	l := &legacySigHasher{tx: tx, h: sha256.New()}
	l.head = binary.LittleEndian.AppendUint32(nil, uint32(tx.Version))
	l.head = appendVarInt(l.head, uint64(len(tx.TxIn)))
	l.offsets = make([]int, 0, len(tx.TxIn)+1)
	for _, in := range tx.TxIn {
		l.offsets = append(l.offsets, len(l.blank))
		l.blank = appendOutPoint(l.blank, in.PreviousOutPoint)
		l.blank = append(l.blank, 0) // an empty script
		l.blank = binary.LittleEndian.AppendUint32(l.blank, in.Sequence)
	}
	l.offsets = append(l.offsets, len(l.blank))
	l.tail = appendVarInt(nil, uint64(len(tx.TxOut)))
	for _, o := range tx.TxOut {
		l.tail = binary.LittleEndian.AppendUint64(l.tail, uint64(o.Value))
		l.tail = appendVarInt(l.tail, uint64(len(o.PkScript)))
		l.tail = append(l.tail, o.PkScript...)
	}
	l.tail = binary.LittleEndian.AppendUint32(l.tail, tx.LockTime)
	l.tail = binary.LittleEndian.AppendUint32(l.tail, uint32(txscript.SigHashAll))
	return l
}

func appendOutPoint(b []byte, op wire.OutPoint) []byte {
	return binary.LittleEndian.AppendUint32(append(b, op.Hash[:]...), op.Index)
}

// appendVarInt appends Bitcoin's CompactSize encoding of n.
func appendVarInt(b []byte, n uint64) []byte {
	switch {
	case n < 0xfd:
		return append(b, byte(n))
	case n <= 0xffff:
		return binary.LittleEndian.AppendUint16(append(b, 0xfd), uint16(n))
	case n <= 0xffffffff:
		return binary.LittleEndian.AppendUint32(append(b, 0xfe), uint32(n))
	}
	return binary.LittleEndian.AppendUint64(append(b, 0xff), n)
}

// size is the bytes one hash with scriptCode reads: the transaction with no script but one.
func (l *legacySigHasher) size(scriptCode []byte) int {
	return len(l.head) + len(l.blank) + len(l.tail) + len(scriptCode) +
		wire.VarIntSerializeSize(uint64(len(scriptCode)))
}

// sum is the double SHA-256 of the transaction with input i's script set to scriptCode.
func (l *legacySigHasher) sum(i int, scriptCode []byte) []byte {
	in := l.tx.TxIn[i]
	l.own = appendOutPoint(l.own[:0], in.PreviousOutPoint)
	l.own = appendVarInt(l.own, uint64(len(scriptCode)))
	l.own = append(l.own, scriptCode...)
	l.own = binary.LittleEndian.AppendUint32(l.own, in.Sequence)
	l.h.Reset()
	l.h.Write(l.head)
	l.h.Write(l.blank[:l.offsets[i]])
	l.h.Write(l.own)
	l.h.Write(l.blank[l.offsets[i+1]:])
	l.h.Write(l.tail)
	first := l.h.Sum(nil)
	second := sha256.Sum256(first)
	return second[:]
}
