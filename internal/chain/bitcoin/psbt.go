package bitcoin

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/btcutil/psbt"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
)

// MaxPSBTSize bounds the input ParsePSBT accepts. Full previous transactions
// (non_witness_utxo) make PSBTs larger than the transaction they spend, but a standard
// transaction is at most 400,000 weight units, so 4 MB leaves ample room.
const MaxPSBTSize = 4 << 20

// globalVersionKey is PSBT_GLOBAL_VERSION; only version 0 (BIP-174) is accepted.
const globalVersionKey = 0xfb

// Kind is the script type of the output an input spends, as far as signing cares.
type Kind int

// Kinds of previous output. KindOther covers scripts Latchkey never signs for (bare
// multisig, unknown witness versions, OP_RETURN, ...) and inputs with no UTXO data.
const (
	KindOther Kind = iota
	KindP2PKH
	KindP2SH
	KindP2WPKH
	KindP2WSH
	KindP2TR
)

func (k Kind) String() string {
	switch k {
	case KindP2PKH:
		return "P2PKH"
	case KindP2SH:
		return "P2SH"
	case KindP2WPKH:
		return "P2WPKH"
	case KindP2WSH:
		return "P2WSH"
	case KindP2TR:
		return "P2TR"
	}
	return "OTHER"
}

// PSBT is a parsed BIP-174 (version 0) PSBT that passed Turnkey's input rules. It is
// immutable: Sign works on a fresh copy and returns new bytes.
type PSBT struct {
	raw      []byte
	pkt      *psbt.Packet
	prevOuts []*wire.TxOut // nil where the input carries no UTXO data
	kinds    []Kind
}

// InputError names the input that broke a rule.
type InputError struct {
	Index int
	Err   error
}

func (e *InputError) Error() string { return fmt.Sprintf("bitcoin: input %d: %v", e.Index, e.Err) }
func (e *InputError) Unwrap() error { return e.Err }

// The rules of docs/api-notes.md §6.1, each a sentinel so callers and tests can tell
// them apart; they reach the caller wrapped in an *InputError.
var (
	ErrNeedNonWitnessUTXO    = errors.New("legacy input (P2PKH, P2SH) needs non_witness_utxo")
	ErrUnexpectedWitnessUTXO = errors.New("legacy input (P2PKH, P2SH) must not have witness_utxo")
	ErrNeedWitnessUTXO       = errors.New("segwit or taproot input needs witness_utxo")
	ErrUnexpectedNonWitness  = errors.New("segwit or taproot input must not have non_witness_utxo")
	ErrNeedRedeemScript      = errors.New("P2SH input needs redeem_script")
	ErrNeedWitnessScript     = errors.New("P2WSH input needs witness_script")
	ErrWrappedSegwit         = errors.New("P2SH-wrapped segwit inputs are not supported")
	ErrScriptPath            = errors.New(
		"taproot script-path spends are not supported (tap_scripts, tap_merkle_root or tap_script_sigs present)",
	)
	ErrUTXOMismatch   = errors.New("UTXO data does not match the outpoint this input spends")
	ErrScriptMismatch = errors.New("redeem_script or witness_script does not hash to the previous output script")
)

// ErrNoInputsOwned is returned by Sign when no input spends an output of the key.
var ErrNoInputsOwned = errors.New("bitcoin: no input of this PSBT spends an output of the signing key")

// ParsePSBT parses hex-decoded PSBT bytes (BIP-174, version 0) and enforces Turnkey's input
// rules (docs/api-notes.md §6.1). Errors about one input are *InputError values naming
// its index.
func ParsePSBT(b []byte) (*PSBT, error) {
	if len(b) > MaxPSBTSize {
		return nil, fmt.Errorf("bitcoin: PSBT is %d bytes, at most %d accepted", len(b), MaxPSBTSize)
	}
	pkt, err := decode(b)
	if err != nil {
		return nil, err
	}
	p := &PSBT{
		raw:      bytes.Clone(b),
		pkt:      pkt,
		prevOuts: make([]*wire.TxOut, len(pkt.Inputs)),
		kinds:    make([]Kind, len(pkt.Inputs)),
	}
	for i := range pkt.Inputs {
		if err := p.checkInput(i); err != nil {
			return nil, &InputError{Index: i, Err: err}
		}
	}
	return p, nil
}

// decode applies the BIP-174 format rules only.
func decode(b []byte) (*psbt.Packet, error) {
	if len(b) >= 5 && bytes.HasPrefix(b, []byte("psbt\xff")) {
		if err := prewalk(b); err != nil {
			return nil, fmt.Errorf("bitcoin: malformed PSBT: %w", err)
		}
	}
	r := bytes.NewReader(b)
	pkt, err := psbt.NewFromRawBytes(r, false)
	if err != nil {
		return nil, fmt.Errorf("bitcoin: malformed PSBT: %w", err)
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("bitcoin: malformed PSBT: %d trailing bytes", r.Len())
	}
	for _, u := range pkt.Unknowns {
		if len(u.Key) == 1 && u.Key[0] == globalVersionKey {
			if len(u.Value) != 4 || binary.LittleEndian.Uint32(u.Value) != 0 {
				return nil, errors.New("bitcoin: only PSBT version 0 is supported")
			}
		}
	}
	seen := make(map[wire.OutPoint]int, len(pkt.UnsignedTx.TxIn))
	for i, in := range pkt.UnsignedTx.TxIn {
		if j, dup := seen[in.PreviousOutPoint]; dup {
			return nil, fmt.Errorf("bitcoin: inputs %d and %d spend the same outpoint", j, i)
		}
		seen[in.PreviousOutPoint] = i
	}
	return pkt, nil
}

// classify reads the script type from a previous output script.
func classify(script []byte) Kind {
	switch {
	case len(script) == 25 && script[0] == txscript.OP_DUP && script[1] == txscript.OP_HASH160 &&
		script[2] == 20 && script[23] == txscript.OP_EQUALVERIFY && script[24] == txscript.OP_CHECKSIG:
		return KindP2PKH
	case len(script) == 23 && script[0] == txscript.OP_HASH160 && script[1] == 20 && script[22] == txscript.OP_EQUAL:
		return KindP2SH
	case len(script) == 22 && script[0] == txscript.OP_0 && script[1] == 20:
		return KindP2WPKH
	case len(script) == 34 && script[0] == txscript.OP_0 && script[1] == 32:
		return KindP2WSH
	case len(script) == 34 && script[0] == txscript.OP_1 && script[1] == 32:
		return KindP2TR
	}
	return KindOther
}

func (p *PSBT) checkInput(i int) error {
	in := &p.pkt.Inputs[i]
	op := p.pkt.UnsignedTx.TxIn[i].PreviousOutPoint
	var prev *wire.TxOut
	if in.NonWitnessUtxo != nil {
		if in.NonWitnessUtxo.TxHash() != op.Hash || int64(op.Index) >= int64(len(in.NonWitnessUtxo.TxOut)) {
			return ErrUTXOMismatch
		}
		prev = in.NonWitnessUtxo.TxOut[op.Index]
		if w := in.WitnessUtxo; w != nil && (w.Value != prev.Value || !bytes.Equal(w.PkScript, prev.PkScript)) {
			return ErrUTXOMismatch
		}
	} else if in.WitnessUtxo != nil {
		prev = in.WitnessUtxo
	}
	p.prevOuts[i] = prev
	if prev == nil {
		return nil // nothing to sign with, and nothing the rules can be checked against
	}
	kind := classify(prev.PkScript)
	p.kinds[i] = kind
	legacy := func() error {
		if in.NonWitnessUtxo == nil {
			return ErrNeedNonWitnessUTXO
		}
		if in.WitnessUtxo != nil {
			return ErrUnexpectedWitnessUTXO
		}
		return nil
	}
	segwit := func() error {
		if in.WitnessUtxo == nil {
			return ErrNeedWitnessUTXO
		}
		if in.NonWitnessUtxo != nil {
			return ErrUnexpectedNonWitness
		}
		return nil
	}
	switch kind {
	case KindP2PKH:
		return legacy()
	case KindP2SH:
		if len(in.RedeemScript) == 0 {
			return ErrNeedRedeemScript
		}
		if !bytes.Equal(btcutil.Hash160(in.RedeemScript), prev.PkScript[2:22]) {
			return ErrScriptMismatch
		}
		if txscript.IsWitnessProgram(in.RedeemScript) {
			return ErrWrappedSegwit
		}
		return legacy()
	case KindP2WPKH:
		return segwit()
	case KindP2WSH:
		if err := segwit(); err != nil {
			return err
		}
		if len(in.WitnessScript) == 0 {
			return ErrNeedWitnessScript
		}
		if h := sha256.Sum256(in.WitnessScript); !bytes.Equal(h[:], prev.PkScript[2:]) {
			return ErrScriptMismatch
		}
		return nil
	case KindP2TR:
		if err := segwit(); err != nil {
			return err
		}
		if len(in.TaprootLeafScript) > 0 || len(in.TaprootMerkleRoot) > 0 || len(in.TaprootScriptSpendSig) > 0 {
			return ErrScriptPath
		}
		return nil
	}
	return nil
}

// NumInputs returns the number of inputs.
func (p *PSBT) NumInputs() int { return len(p.kinds) }

// InputKind returns the script type of the output input i spends (KindOther when unknown).
func (p *PSBT) InputKind(i int) Kind { return p.kinds[i] }
