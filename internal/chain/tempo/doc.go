// Package tempo parses Tempo's native transaction (EIP-2718 type 0x76, sent to
// sign_transaction as TRANSACTION_TYPE_TEMPO), computes the sender's digest, assembles the
// signed transaction and renders the tempo.tx value of the policy language. Tempo legacy EVM
// transactions go through package ethereum as TRANSACTION_TYPE_ETHEREUM.
//
// The encoding, as viem serializes it (through ox's tempo TxEnvelopeTempo) and the Tempo
// specification (docs.tempo.xyz, "Tempo Transaction") describes it:
//
//	0x76 ‖ rlp([chain_id, max_priority_fee_per_gas, max_fee_per_gas, gas_limit,
//	            calls [[to, value, input], ...], access_list, nonce_key, nonce,
//	            valid_before, valid_after, fee_token, fee_payer_signature,
//	            authorization_list, key_authorization?, sender_signature?])
//
// The sender signs keccak256 of the unsigned serialization. When a fee payer takes part
// (fee_payer_signature is the 0x00 marker or the fee payer's [v, r, s]), the sender's digest
// is taken with the 0x00 marker and an empty fee_token: the fee payer, not the sender, picks
// the fee token. The signed transaction appends the secp256k1 signature envelope, the bare
// 65 bytes r ‖ s ‖ v (v = 27 + recovery id, no type prefix; P-256 and WebAuthn envelopes,
// which carry a type byte, are not produced here).
//
// Vectors: ox's own published test snapshots and transactions serialized and signed by ox
// (testdata/README.md).
//
// The package never sees a private key and does no I/O; bad bytes give an error, never a
// panic, and cost a few times their size: a transaction is at most MaxTransactionSize bytes
// (docs/limits.md §4.2). Tempo authorizations and key authorizations are carried through unchanged and not
// shown to the policy engine (Turnkey's tempo.tx does not list them); a 20-byte sender hint
// in the fee payer field belongs to the fee payer's 0x78 envelope and is rejected.
package tempo
