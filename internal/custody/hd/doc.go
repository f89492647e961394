// Package hd owns the plaintext side of key derivation: BIP-39 mnemonics and seeds, BIP-32 and
// SLIP-10 derivation for secp256k1, P-256 (nist256p1) and Ed25519, standalone private keys, and
// the signing primitives (ECDSA with recovery id, Ed25519, BIP-340 Schnorr with the optional
// BIP-86 Taproot tweak).
//
// It is part of internal/custody, the only place in Latchkey where plaintext key material
// exists. It must never:
//   - do I/O, log, or print (errors never contain mnemonic words, seeds or keys);
//   - decide what to hash: callers pass the exact digest or message to sign;
//   - hand a private key to code outside internal/custody (Key.PrivateKey exists only so custody
//     can seal exports; Key.Wipe clears the key when the caller is done).
//
// Derivation rules:
//   - secp256k1 follows BIP-32 (which SLIP-10 reproduces for that curve).
//   - P-256 follows SLIP-10 "nist256p1", including its retry rule: when a derived scalar is zero
//     or not below the group order, the HMAC is recomputed over 0x01 || IR || ser32(i) (children)
//     or over I itself (master) until it is valid.
//   - Ed25519 follows SLIP-10, which defines hardened children only. A non-hardened segment in an
//     Ed25519 path is treated as hardened (m/44'/501'/0'/0 derives m/44'/501'/0'/0'), because
//     Turnkey's documented default paths contain such segments and its SDKs send fully hardened
//     ones; accepting and hardening serves both.
//
// Signing choices: ECDSA uses RFC 6979 nonces and low-S on both curves (P-256 verifiers accept
// either half; one canonical form keeps the two curves alike), with the recovery id V in {0, 1}.
// Schnorr follows BIP-340 with fresh auxiliary randomness and verifies each signature before
// returning it, as BIP-340's signing algorithm prescribes.
//
// Memory: every secret is a byte slice or array the caller (or this package) zeroes; the string
// functions (NewMnemonic, MnemonicToSeed, …) are for tests and clients, custody uses the *Bytes
// forms. Where a library keeps copies it never clears, the step is computed here and tested
// against the library byte for byte: PBKDF2 and HMAC-SHA512 (pbkdf2.go), secp256k1 ECDSA with
// its RFC 6979 nonce, and Ed25519 (over filippo.io/edwards25519). P-256 still goes through
// crypto/ecdh and crypto/ecdsa, whose copies of the scalar cannot be cleared.
//
// Mnemonic → seed is PBKDF2-HMAC-SHA512 with 2048 rounds (about 1 ms); derivation from a seed is
// some 0.1–0.3 ms. Signing takes a derived Key and never re-runs either.
package hd
