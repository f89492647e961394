// Package address turns public keys into the addresses of every Turnkey ADDRESS_FORMAT_*
// (docs/api-notes.md §6): it owns the format table (which curve each format
// takes, the SDK default path) and each chain's encoding.
//
// It works on public keys only. It must never see, accept or derive a private key, and it does
// no I/O. Every input is treated as untrusted: bad bytes give an error, never a panic.
//
// Choices where Turnkey does not publish the rule (each is also noted at its code):
//   - BITCOIN_*_P2SH is P2SH-P2WPKH: the redeem script is 0 <HASH160(pk)> (BIP-49 style), as in
//     Turnkey's own with-bitcoin example (examples/with-bitcoin/src/p2sh/deriveBtcAddress.ts)
//     and its documented path m/49'/...
//   - BITCOIN_*_P2WSH wraps the single-key witness script <pk> OP_CHECKSIG. Unconfirmed: a
//     1-of-1 CHECKMULTISIG script (the documented path m/48'/…/2' is BIP-48's multisig path)
//     would give a different address.
//   - BITCOIN_*_P2TR is the BIP-86 key-path output (tweak with no script tree), bech32m.
//   - SIGNET uses testnet's version bytes and the "tb" HRP; REGTEST uses "bcrt".
//   - TON_* addresses are user-friendly, URL-safe base64, non-bounceable ("UQ…"), mainnet, on
//     workchain 0, with @ton/ton's default wallet ids (WalletContract*.create({workchain: 0,
//     publicKey}), which Turnkey's with-ton example uses): 698983191 for V3R2 and V4R2, and for
//     V5R1 the client wallet id for network -239 (mainnet), workchain 0, version 0, subwallet 0
//     (= 2147483409). Non-bounceable is TON's recommended form for wallet addresses (a transfer
//     to a wallet not yet deployed is then not bounced back); which flag Turnkey uses is
//     unconfirmed, and the bounceable ("EQ…") and raw forms name the same account.
//   - SPARK_* is bech32m with HRP "spark"/"sparkrt" over the protobuf SparkAddress
//     {1: identity public key} (0x0a 0x21 ‖ 33-byte compressed key), matching
//     @buildonspark/spark-sdk's encodeSparkAddress.
//   - SEI is secp256k1 only (networks/sei.mdx and the SDK); the docs table's ED25519 is treated as
//     a docs error.
//   - Ed25519 public keys are not checked to be on the curve: every format hashes or encodes the
//     32 bytes as given.
package address
