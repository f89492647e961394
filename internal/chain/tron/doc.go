// Package tron parses the unsigned Tron transactions Turnkey's SDK flow sends
// (TRANSACTION_TYPE_TRON: TronWeb's raw_data_hex, a serialized protocol.Transaction.raw),
// computes the digest to sign (SHA-256 of raw_data, the transaction id), assembles the
// signed protocol.Transaction, and renders the tron.tx value of the policy language.
//
// Protobuf is read by a small hand-written reader (no generated code): only the fields the
// policy view needs are decoded, unknown fields are skipped as protobuf does, while a known
// field with the wrong wire type or a singular field that appears twice is rejected, so that
// what the policy engine sees is what java-tron executes. The parameter's type_url must name
// the contract's type (java-tron unpacks the Any by type).
//
// The package never sees a private key and does no I/O; bad bytes give an error, never a
// panic. Its cost is linear in the input, which is at most MaxRawDataSize bytes (java-tron's
// own limit; docs/limits.md §5.2).
//
// Choices where Turnkey does not publish the rule:
//   - The signature is r ‖ s ‖ v with v = 27 + recovery id, as TronWeb's signTransaction
//     writes it (java-tron accepts 0/1 as well).
//   - Exactly one contract per transaction (java-tron rejects others); raw_data.auths is
//     rejected; negative amounts, balances, fee_limit and timestamps are rejected.
//   - tron.tx.data (the memo) is the text when the bytes are UTF-8, lowercase hex otherwise;
//     contract data (TriggerSmartContract) is lowercase hex without 0x, as Turnkey's examples
//     compare it (data[0..8] == 'a9059cbb'); numbers are *big.Int.
//   - Contract types other than those Turnkey lists (TransferContract, TriggerSmartContract,
//     Delegate/UnDelegateResourceContract, FreezeBalanceV2/UnfreezeBalanceV2Contract,
//     AccountPermissionUpdateContract) are parsed to their type name, permission_id and
//     owner_address only; the caller decides whether to sign them.
package tron
