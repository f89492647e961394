// Package wallets holds the operations on keys: HD wallets and their accounts, standalone
// private keys and their tags, raw-payload and transaction signing, and export and import.
//
// Records: "wallet" (name, sealed mnemonic, exported/imported), "wallet_account" (curve, path,
// address format, address, public key, the derived key sealed for this account), "private_key"
// (curve, public key, addresses, the key sealed), "private_key_tag", and "import_target" (the
// one-time key an import is encrypted to, per user and kind). Key material goes in and out only
// through custody.Custodian; this package sees public keys, addresses and sealed bytes.
//
// Signing resolves signWith as a wallet account address, a private key id, a private key
// address, or a public key, in that order. The signature itself is made in the operation's
// Prepare step (outside the store's serial section); Execute re-checks the key still exists.
// Every address is derived by internal/chain/address; Ed25519 paths are hardened at every
// segment; SPARK_* accounts always use the Spark identity path.
package wallets
