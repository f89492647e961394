// Package solana reads Solana wire transactions for TRANSACTION_TYPE_SOLANA
// (docs/api-notes.md §6.1): it parses the untrusted bytes a client sends, says
// which signature slot a key fills and what bytes it signs, puts a signature into that slot,
// and gives the policy engine its solana.tx view (section 4.3).
//
// It never sees a private key and does no I/O: the caller signs Message() with the key it
// holds and hands the 64-byte signature back to WithSignature.
//
// The flow for one sign_transaction:
//
//	tx, err := solana.ParseTransaction(unsigned)    // strict, bounds-checked
//	err = solana.CheckNoLookupProgramIDs(tx)         // Turnkey's documented refusal
//	view := tx.PolicyView()                          // solana.tx for the policy engine
//	slot, err := tx.SignerIndex(pubkey)              // ErrNotSigner when not a required signer
//	signed, err := tx.WithSignature(slot, ed25519.Sign(key, tx.Message()))
//
// Rules it holds to:
//   - Input is the full wire transaction as @solana/web3.js serializes it with
//     requireAllSignatures false: a compact-u16 signature count, one 64-byte slot per required
//     signer (zeroed when unsigned), then a legacy or v0 message. The message alone, other
//     message versions, and trailing bytes are refused.
//   - The runtime's structural checks apply (Message::sanitize): as many slots as required
//     signatures, a writable fee payer, header counts within the account list, no duplicate
//     static keys, at most 256 accounts, in-range program and account indexes, no program at
//     index 0, no empty lookup, minimal compact-u16 encodings.
//   - So do the network's limits, checked before the work (docs/limits.md §5.1): at most
//     MaxTransactionSize (1232) bytes, MaxInstructions (64) instructions and
//     MaxInstructionAccounts (255) account references an instruction. The policy view
//     resolves each account once, so it costs a few words per reference.
//   - WithSignature changes only the 64 bytes of its slot; the rest of the transaction is
//     returned byte for byte, so other signers' slots are untouched.
//   - A program id loaded through a lookup table parses (so the policy view can show it), but
//     CheckNoLookupProgramIDs refuses it, as Turnkey documents and as the runtime's v0
//     sanitize does; callers run it before signing.
//   - In the policy view, accounts loaded from lookup tables read "ADDRESS_TABLE_LOOKUP".
//     transfers lists top-level System Program Transfer instructions; spl_transfers lists
//     top-level SPL Token and Token-2022 Transfer, TransferChecked and TransferCheckedWithFee
//     (token_mint is empty for plain Transfer, which names no mint). Inner instructions are
//     not visible in a transaction and are not listed.
//
// Sponsor (sponsor.go) rewrites a transaction for a fee payer that is not the caller: the payer
// first among the keys and signers, every index shifted, nothing else changed but, with rent
// sponsorship, the funder of an associated token account create; it prices the fee (base and
// priority) and refuses what it cannot make safe. VerifySignatures checks every slot before a
// sponsored transaction is sent.
package solana
