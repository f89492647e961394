// Package custody is the only place in Latchkey where plaintext key material exists.
//
// It owns:
//   - the keyring: versioned AES-256-GCM data keys, themselves sealed under the operator's master
//     key and kept in the store as one record. Every secret Latchkey keeps (mnemonics, private keys,
//     proxy API keys, client secrets, server keys) is sealed with the newest data key before it
//     reaches the store; the additional data binds each ciphertext to its organization, record kind
//     and record id, so a ciphertext moved to another record does not open. Rotation adds a version;
//     old versions still open. The master key itself never touches the store.
//   - the server identity keys (export/import bundle signer, session JWT notarizer, OTP token and
//     OTP bundle signer, app-proof signer): generated on first start, sealed in the store so every
//     process over one database shares them, published by their public halves only.
//   - HPKE bundles (Turnkey's enclave channel: DHKEM(P-256), HKDF-SHA256, AES-256-GCM, info
//     "turnkey_hpke", aad = enc ‖ receiver public key, both uncompressed).
//   - key derivation and signing (subpackage hd).
//
// It signs, derives and encrypts to a target; it never hands a private key to its caller, never
// logs, and never puts secret bytes into an error. Decrypted secrets are byte slices zeroed before
// the call that opened them returns, never strings; built with GOEXPERIMENT=runtimesecret, those
// calls run under runtime/secret as well (runtimesecret.go). docs/operations.md ("Key material in
// memory") says what this guarantees and what Go cannot.
package custody
