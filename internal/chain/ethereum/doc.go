// Package ethereum parses the unsigned Ethereum transactions and typed payloads that
// Turnkey's SDKs send (docs/api-notes.md §4.3, §6.1 and §7), computes the digest
// that must be signed, assembles the signed transaction, and exposes the values the policy
// engine reads (eth.tx, eth.eip_712, eth.eip_7702_authorization).
//
// The flow for sign_transaction is ParseUnsigned → PolicyView (policy) → Sign, where Sign
// calls a RecoverableSigner with SigningHash and re-inserts r, s and v. For sign_raw_payload
// with PAYLOAD_ENCODING_EIP712, ParseTypedData checks the payload and computes the digest to
// sign, and TypedData.View builds the policy view when a policy asks for it; for
// PAYLOAD_ENCODING_EIP7702_AUTHORIZATION, HashAuthorization returns both. The limits on what
// these parsers accept are in docs/limits.md §4.
//
// The package never sees a private key and does no I/O. Every input is untrusted: bad bytes
// give an error that says what is wrong, never a panic.
//
// Choices where Turnkey does not publish the rule:
//   - eth.tx.to is "" for contract creation; max_fee_per_gas and max_priority_fee_per_gas are
//     absent for legacy and type 1, max_fee_per_blob_gas for every type but 3.
//   - eth.eip_712.message renders integers as *big.Int and every address, bytes and bytesN
//     value as lowercase 0x-hex; the domain view also carries salt when present.
//   - A legacy transaction in EIP-155 form with chain id 0 is rejected (it has no replay
//     protection and no library produces it).
//   - Typed data without EIP712Domain in types gets it derived from the domain fields present,
//     in the EIP's order (name, version, chainId, verifyingContract, salt), as viem does.
//
// Transaction encoding, hashing and signature insertion use go-ethereum's core/types; the
// EIP-712 encoder is our own, so that it accepts exactly the payload shapes viem and ethers
// send (numbers as JSON numbers, decimal or hex strings).
package ethereum
