package bitcoin

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/btcutil/psbt"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
)

// ECDSASigner signs a 32-byte digest with the one key that signs and returns a low-S DER
// signature without the sighash byte. The custody layer provides it.
type ECDSASigner func(digest [32]byte) (der []byte, err error)

// SchnorrSigner returns a BIP-340 signature of a 32-byte digest. For key-path P2TR the
// caller applies the BIP-86 tweak (no script tree) to the key before signing.
type SchnorrSigner func(digest [32]byte) (sig [64]byte, err error)

// networks are the names Sign and PolicyView take.
var networks = map[string]bool{"mainnet": true, "testnet": true, "signet": true, "regtest": true}

// ownScripts are the scripts one compressed key can be paid to, as internal/chain/address
// derives its addresses (plus the legacy P2SH redeem scripts Sign accepts, see the doc).
type ownScripts struct {
	pub      *btcec.PublicKey
	compr    []byte
	p2pkh    []byte
	p2pk     []byte // <pk> OP_CHECKSIG: the P2WSH witness script and a legacy P2SH redeem script
	p2wpkh   []byte
	p2wshKey []byte // sha256(p2pk)
	p2tr     []byte
	tapKey   *btcec.PublicKey // BIP-86 output key
}

func scriptsFor(compressed []byte) (*ownScripts, error) {
	if len(compressed) != 33 || (compressed[0] != 2 && compressed[0] != 3) {
		return nil, errors.New("bitcoin: signing key must be a 33-byte compressed public key")
	}
	pub, err := btcec.ParsePubKey(compressed)
	if err != nil {
		return nil, fmt.Errorf("bitcoin: signing key: %w", err)
	}
	h := btcutil.Hash160(compressed)
	s := &ownScripts{pub: pub, compr: bytes.Clone(compressed)}
	s.p2pkh = append(
		append([]byte{txscript.OP_DUP, txscript.OP_HASH160, 20}, h...),
		txscript.OP_EQUALVERIFY,
		txscript.OP_CHECKSIG,
	)
	s.p2pk = append(append([]byte{33}, compressed...), txscript.OP_CHECKSIG)
	s.p2wpkh = append([]byte{txscript.OP_0, 20}, h...)
	wsh := sha256.Sum256(s.p2pk)
	s.p2wshKey = append([]byte{txscript.OP_0, 32}, wsh[:]...)
	s.tapKey = txscript.ComputeTaprootKeyNoScript(pub)
	s.p2tr = append([]byte{txscript.OP_1, 32}, schnorr.SerializePubKey(s.tapKey)...)
	return s, nil
}

// prevOutFetcher serves the known previous outputs; an unknown one reads as an empty
// output so txscript never meets nil (signing taproot refuses when any is unknown).
type prevOutFetcher map[wire.OutPoint]*wire.TxOut

func (f prevOutFetcher) FetchPrevOutput(op wire.OutPoint) *wire.TxOut {
	if o, ok := f[op]; ok {
		return o
	}
	return &wire.TxOut{}
}

// Sign signs every input that spends an output of compressedPubKey and returns the
// serialized PSBT (not finalized) and how many inputs it signed. Inputs of other keys are
// left as they are. ECDSA inputs (P2PKH, P2SH, P2WPKH, P2WSH) get a DER signature with
// SIGHASH_ALL in partial_sigs; key-path P2TR inputs get a 64-byte SIGHASH_DEFAULT Schnorr
// signature in tap_key_sig. Each signature the callbacks return is verified before use.
func (p *PSBT) Sign(
	compressedPubKey []byte,
	net string,
	ecdsaSign ECDSASigner,
	schnorrSign SchnorrSigner,
) ([]byte, int, error) {
	if !networks[net] {
		return nil, 0, fmt.Errorf("bitcoin: unknown network %q", net)
	}
	own, err := scriptsFor(compressedPubKey)
	if err != nil {
		return nil, 0, err
	}
	// Work on a fresh decode so a failure leaves nothing half-signed.
	pkt, err := decode(p.raw)
	if err != nil {
		return nil, 0, err
	}
	tx := pkt.UnsignedTx
	fetch := prevOutFetcher{}
	allKnown := true
	for i, o := range p.prevOuts {
		if o == nil {
			allKnown = false
			continue
		}
		fetch[tx.TxIn[i].PreviousOutPoint] = o
	}
	hashes := txscript.NewTxSigHashes(tx, fetch)
	legacy, err := p.legacyHasher(pkt, own)
	if err != nil {
		return nil, 0, err
	}

	signed := 0
	for i := range pkt.Inputs {
		in := &pkt.Inputs[i]
		prev := p.prevOuts[i]
		if prev == nil || len(in.FinalScriptSig) > 0 || len(in.FinalScriptWitness) > 0 {
			continue
		}
		var digest []byte
		switch p.kinds[i] {
		case KindP2PKH:
			if bytes.Equal(prev.PkScript, own.p2pkh) {
				digest = legacy.sum(i, prev.PkScript)
			}
		case KindP2SH:
			if bytes.Equal(in.RedeemScript, own.p2pk) || bytes.Equal(in.RedeemScript, own.p2pkh) {
				digest = legacy.sum(i, in.RedeemScript)
			}
		case KindP2WPKH:
			if bytes.Equal(prev.PkScript, own.p2wpkh) {
				digest, err = witnessV0Sighash(tx, i, prev.PkScript, prev.Value, hashes)
			}
		case KindP2WSH:
			if bytes.Equal(prev.PkScript, own.p2wshKey) {
				digest, err = witnessV0Sighash(tx, i, in.WitnessScript, prev.Value, hashes)
			}
		case KindP2TR:
			if !bytes.Equal(prev.PkScript, own.p2tr) {
				continue
			}
			if len(in.TaprootInternalKey) > 0 && !bytes.Equal(in.TaprootInternalKey, own.compr[1:]) {
				return nil, 0, &InputError{i, errors.New("tap_internal_key is not the signing key")}
			}
			if in.SighashType != 0 {
				return nil, 0, &InputError{
					i,
					fmt.Errorf(
						"requests sighash type %#x; only SIGHASH_DEFAULT is signed for taproot",
						uint32(in.SighashType),
					),
				}
			}
			if !allKnown {
				return nil, 0, &InputError{
					i,
					errors.New(
						"taproot signing needs the UTXO of every input (BIP-341 commits to all amounts and scripts)",
					),
				}
			}
			if err := signSchnorr(in, tx, i, fetch, hashes, own, schnorrSign); err != nil {
				return nil, 0, &InputError{i, err}
			}
			signed++
			continue
		}
		if err != nil {
			return nil, 0, &InputError{i, err}
		}
		if digest == nil {
			continue
		}
		if in.SighashType != 0 && in.SighashType != txscript.SigHashAll {
			return nil, 0, &InputError{
				i,
				fmt.Errorf("requests sighash type %#x; only SIGHASH_ALL is signed", uint32(in.SighashType)),
			}
		}
		if err := signECDSA(in, digest, own, ecdsaSign); err != nil {
			return nil, 0, &InputError{i, err}
		}
		signed++
	}
	if signed == 0 {
		return nil, 0, ErrNoInputsOwned
	}
	var out bytes.Buffer
	if err := pkt.Serialize(&out); err != nil {
		return nil, 0, fmt.Errorf("bitcoin: serialize PSBT: %w", err)
	}
	return out.Bytes(), signed, nil
}

func signECDSA(in *psbt.PInput, digest []byte, own *ownScripts, sign ECDSASigner) error {
	if sign == nil {
		return errors.New("no ECDSA signer")
	}
	der, err := sign([32]byte(digest))
	if err != nil {
		return fmt.Errorf("ECDSA signer: %w", err)
	}
	sig, err := ecdsa.ParseDERSignature(der)
	if err != nil {
		return fmt.Errorf("ECDSA signer returned a malformed signature: %w", err)
	}
	if !sig.Verify(digest, own.pub) {
		return errors.New("ECDSA signer returned a signature that does not verify")
	}
	// Re-serialize: ParseDERSignature accepts only strict DER, and Serialize canonicalizes S to the low half.
	full := append(sig.Serialize(), byte(txscript.SigHashAll))
	kept := in.PartialSigs[:0]
	for _, ps := range in.PartialSigs {
		if !bytes.Equal(ps.PubKey, own.compr) {
			kept = append(kept, ps)
		}
	}
	in.PartialSigs = append(kept, &psbt.PartialSig{PubKey: bytes.Clone(own.compr), Signature: full})
	return nil
}

func signSchnorr(
	in *psbt.PInput,
	tx *wire.MsgTx,
	i int,
	fetch prevOutFetcher,
	hashes *txscript.TxSigHashes,
	own *ownScripts,
	sign SchnorrSigner,
) error {
	if sign == nil {
		return errors.New("no Schnorr signer")
	}
	digest, err := taprootSighash(tx, i, fetch, hashes, txscript.SigHashDefault)
	if err != nil {
		return err
	}
	sig, err := sign([32]byte(digest))
	if err != nil {
		return fmt.Errorf("Schnorr signer: %w", err)
	}
	parsed, err := schnorr.ParseSignature(sig[:])
	if err != nil {
		return fmt.Errorf("Schnorr signer returned a malformed signature: %w", err)
	}
	if !parsed.Verify(digest, own.tapKey) {
		return errors.New("Schnorr signer returned a signature that does not verify under the BIP-86 tweaked key")
	}
	in.TaprootKeySpendSig = bytes.Clone(sig[:])
	return nil
}

// legacyHasher returns the signature hasher of the legacy inputs Sign will sign (nil when
// there are none), refusing first when their hashes would read more than
// MaxLegacySighashBytes.
func (p *PSBT) legacyHasher(pkt *psbt.Packet, own *ownScripts) (*legacySigHasher, error) {
	var scripts [][]byte
	for i := range pkt.Inputs {
		in, prev := &pkt.Inputs[i], p.prevOuts[i]
		if prev == nil || len(in.FinalScriptSig) > 0 || len(in.FinalScriptWitness) > 0 {
			continue
		}
		switch {
		case p.kinds[i] == KindP2PKH && bytes.Equal(prev.PkScript, own.p2pkh):
			scripts = append(scripts, prev.PkScript)
		case p.kinds[i] == KindP2SH && (bytes.Equal(in.RedeemScript, own.p2pk) || bytes.Equal(in.RedeemScript, own.p2pkh)):
			scripts = append(scripts, in.RedeemScript)
		}
	}
	if len(scripts) == 0 {
		return nil, nil
	}
	l := newLegacySigHasher(pkt.UnsignedTx)
	total := 0
	for _, sc := range scripts {
		total += l.size(sc)
	}
	if total > MaxLegacySighashBytes {
		return nil, fmt.Errorf(
			"bitcoin: the signature hashes of the %d legacy inputs to sign would read %d bytes, more than the "+
				"%d allowed (each covers the whole transaction; no standard transaction needs as much)",
			len(scripts), total, MaxLegacySighashBytes)
	}
	return l, nil
}

// witnessV0Sighash is BIP-143 with SIGHASH_ALL; for P2WPKH the script is the output script
// (txscript turns it into the P2PKH script code), for P2WSH the witness script.
func witnessV0Sighash(
	tx *wire.MsgTx,
	i int,
	script []byte,
	amount int64,
	hashes *txscript.TxSigHashes,
) ([]byte, error) {
	return txscript.CalcWitnessSigHash(script, hashes, txscript.SigHashAll, tx, i, amount)
}

// taprootSighash is the BIP-341 key-path signature message hash.
func taprootSighash(
	tx *wire.MsgTx,
	i int,
	fetch txscript.PrevOutputFetcher,
	hashes *txscript.TxSigHashes,
	ht txscript.SigHashType,
) ([]byte, error) {
	return txscript.CalcTaprootSignatureHash(hashes, ht, tx, i, fetch)
}
