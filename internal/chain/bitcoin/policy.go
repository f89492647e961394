package bitcoin

import (
	"encoding/hex"
	"math/big"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"
)

// lockTimeThreshold splits nLockTime into block heights (below) and Unix times (BIP-65).
const lockTimeThreshold = 500_000_000

func params(net string) *chaincfg.Params {
	switch net {
	case "mainnet":
		return &chaincfg.MainNetParams
	case "testnet":
		return &chaincfg.TestNet3Params
	case "signet":
		return &chaincfg.SigNetParams
	case "regtest":
		return &chaincfg.RegressionNetParams
	}
	return nil
}

// PolicyView returns the transaction as the policy engine's bitcoin.tx (docs/api-notes.md §4.3).
// Satoshi amounts are *big.Int; version, vout, sequence and the locktime amount are
// int. Output addresses are encoded for net ("mainnet", "testnet", "signet", "regtest");
// a script with no address form, or an unknown net, gives address "". fee (inputs minus
// outputs) is present only when every input carries its UTXO.
func (p *PSBT) PolicyView(net string) map[string]any {
	tx := p.pkt.UnsignedTx
	inputs := make([]any, len(tx.TxIn))
	inSum := new(big.Int)
	allKnown := true
	for i, in := range tx.TxIn {
		inputs[i] = map[string]any{
			"tx_id":    in.PreviousOutPoint.Hash.String(),
			"vout":     int(in.PreviousOutPoint.Index),
			"sequence": int(in.Sequence),
		}
		if o := p.prevOuts[i]; o != nil {
			inSum.Add(inSum, big.NewInt(o.Value))
		} else {
			allKnown = false
		}
	}
	outputs := make([]any, len(tx.TxOut))
	outSum := new(big.Int)
	for i, o := range tx.TxOut {
		addr, typ := outputAddress(o.PkScript, params(net))
		outputs[i] = map[string]any{
			"value":         big.NewInt(o.Value),
			"script_pubkey": hex.EncodeToString(o.PkScript),
			"address":       addr,
			"address_type":  typ,
		}
		outSum.Add(outSum, big.NewInt(o.Value))
	}
	lockType := "BLOCK"
	if tx.LockTime >= lockTimeThreshold {
		lockType = "TIMESTAMP"
	}
	view := map[string]any{
		"version":  int(tx.Version),
		"inputs":   inputs,
		"outputs":  outputs,
		"locktime": map[string]any{"amount": int(tx.LockTime), "type": lockType},
	}
	if allKnown {
		view["fee"] = new(big.Int).Sub(inSum, outSum)
	}
	return view
}

// outputAddress names an output script's type and encodes its address. Types follow the
// ADDRESS_FORMAT_BITCOIN_*_<TYPE> suffixes; scripts with no such type read "OP_RETURN" or
// "UNKNOWN" with an empty address.
func outputAddress(script []byte, net *chaincfg.Params) (string, string) {
	var typ string
	switch classify(script) {
	case KindP2PKH:
		typ = "P2PKH"
	case KindP2SH:
		typ = "P2SH"
	case KindP2WPKH:
		typ = "P2WPKH"
	case KindP2WSH:
		typ = "P2WSH"
	case KindP2TR:
		typ = "P2TR"
	default:
		if len(script) > 0 && script[0] == txscript.OP_RETURN {
			return "", "OP_RETURN"
		}
		return "", "UNKNOWN"
	}
	if net == nil {
		return "", typ
	}
	var a btcutil.Address
	var err error
	switch typ {
	case "P2PKH":
		a, err = btcutil.NewAddressPubKeyHash(script[3:23], net)
	case "P2SH":
		a, err = btcutil.NewAddressScriptHashFromHash(script[2:22], net)
	case "P2WPKH":
		a, err = btcutil.NewAddressWitnessPubKeyHash(script[2:], net)
	case "P2WSH":
		a, err = btcutil.NewAddressWitnessScriptHash(script[2:], net)
	case "P2TR":
		a, err = btcutil.NewAddressTaproot(script[2:], net)
	}
	if err != nil {
		return "", typ
	}
	return a.EncodeAddress(), typ
}
