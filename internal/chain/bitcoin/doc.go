// Package bitcoin reads PSBTs for TRANSACTION_TYPE_BITCOIN (docs/api-notes.md §6.1):
// it parses the untrusted BIP-174 bytes a client sends, enforces Turnkey's
// input rules, finds the inputs one key must sign, computes their signature hashes, puts the
// signatures in, and gives the policy engine its bitcoin.tx view (section 4.3).
//
// It never sees a private key and does no I/O. The custody layer passes two callbacks for
// the one key that signs: an ECDSASigner (low-S DER, no sighash byte) and a SchnorrSigner
// (BIP-340 over the BIP-86-tweaked key). Every signature they return is verified against
// the key before it goes into the PSBT, so a wrong key or a missing tweak is an error, not
// an unspendable signature.
//
// The flow for one sign_transaction:
//
//	p, err := bitcoin.ParsePSBT(raw)             // BIP-174 v0 + Turnkey's input rules
//	view := p.PolicyView("mainnet")               // bitcoin.tx for the policy engine
//	out, n, err := p.Sign(pub, "mainnet", ecdsaSigner, schnorrSigner)
//
// Rules ParsePSBT enforces, each failing with an *InputError that names the input:
//   - P2PKH and P2SH inputs need non_witness_utxo and must not carry witness_utxo;
//     P2WPKH, P2WSH and P2TR inputs need witness_utxo and must not carry non_witness_utxo.
//   - non_witness_utxo must be the transaction the input spends (its txid is checked);
//     redeem_script and witness_script must hash to the output script.
//   - P2SH needs redeem_script; P2WSH needs witness_script.
//   - P2SH-wrapped segwit (a redeem script that is a witness program) is rejected, and so is
//     any taproot script path (tap_leaf_script, tap_merkle_root or tap_script_sig present).
//   - Format: only PSBT version 0; no trailing bytes; transactions inside values must fill
//     them exactly (BIP-174's "invalid value size" vector, which btcutil/psbt lets through);
//     no two inputs spending one outpoint. Inputs whose output script is of another kind, or
//     that carry no UTXO at all, are left alone: they can never be the signing key's.
//
// Which inputs Sign signs: those whose previous output pays the key as
// internal/chain/address derives it, namely P2PKH, P2WPKH, P2WSH with the witness script
// <pk> OP_CHECKSIG, and BIP-86 key-path P2TR (tap_internal_key, when present, must be the
// key). For P2SH, internal/chain/address derives P2SH-P2WPKH, which Turnkey documents as
// unsupported for PSBT signing and ParsePSBT therefore rejects; the legacy P2SH inputs Sign
// does sign are those whose redeem script is <pk> OP_CHECKSIG or the key's P2PKH script.
// ECDSA inputs get SIGHASH_ALL (legacy sighash for P2PKH and P2SH, BIP-143 for P2WPKH and
// P2WSH), stored as DER ‖ 0x01 in partial_sigs; P2TR inputs get a 64-byte SIGHASH_DEFAULT
// BIP-341 signature in tap_key_sig. An input that asks for another sighash type is an error;
// already finalized inputs are skipped. The result is not finalized. Sign works on a fresh
// copy, so the parsed PSBT never changes and a failed Sign leaves nothing half-signed.
//
// Sighashes come from btcd's txscript (CalcWitnessSigHash, CalcTaprootSignatureHash; the
// tests hold them to the BIP-143 and BIP-341 vectors), except the legacy one: each legacy
// signature hash covers the whole transaction, so legacy.go serializes the transaction once and
// hashes it around each signed input (the tests hold it to txscript's CalcSignatureHash).
//
// Limits, checked before the work (docs/limits.md §5.3): MaxPSBTSize bytes, an unsigned
// transaction of MaxUnsignedTxSize bytes, MaxMapEntries entries in one map (btcutil checks
// each entry against the ones before it), and MaxLegacySighashBytes read for the legacy
// signature hashes of one Sign.
//
// PolicyView field choices Turnkey does not publish: address_type is the
// ADDRESS_FORMAT_BITCOIN_*_<TYPE> suffix (P2PKH, P2SH, P2WPKH, P2WSH, P2TR), or OP_RETURN /
// UNKNOWN with an empty address; locktime.type is BLOCK below 500,000,000 and TIMESTAMP
// from there (BIP-65); fee is absent unless every input carries its UTXO.
package bitcoin
