// Package stamp parses and verifies the request stamps Turnkey clients send,
// and signs requests as those clients do.
//
// # What it owns
//
//   - X-Stamp (API-key stamp): VerifyAPIKey. The value is base64url of JSON
//     {publicKey, scheme, signature} (padded, unpadded and standard base64
//     are all accepted; any key order; unknown keys ignored; hex in either
//     case). Schemes (docs/wire.md §1, tkhq/sdk packages/api-key-stamper,
//     tkhq/go-sdk v2 stamper.go, packages/wallet-stamper):
//     SIGNATURE_SCHEME_TK_API_P256: ECDSA P-256 over SHA-256(body), DER hex;
//     SIGNATURE_SCHEME_TK_API_SECP256K1: ECDSA secp256k1 over SHA-256(body),
//     DER hex; SIGNATURE_SCHEME_TK_API_ED25519: Ed25519 over the body, 64-byte
//     hex signature, 32-byte hex key; SIGNATURE_SCHEME_TK_API_SECP256K1_EIP191:
//     ECDSA secp256k1 over keccak256("\x19Ethereum Signed Message:\n" +
//     len(body) + body), r‖s as DER hex with v dropped. ECDSA public keys may
//     arrive compressed or uncompressed; APIKeyProof.PublicKey is always the
//     compressed lowercase form under which keys are registered. High-S
//     signatures are accepted on both curves, because noble's P-256 signer
//     emits them (crypto/ecdsa and decred's Verify both accept high S).
//     Signatures must be strict DER.
//   - X-Stamp-WebAuthn (passkey stamp): ParseWebAuthn and Assertion.Verify.
//     The value is raw JSON {authenticatorData, clientDataJson, credentialId,
//     signature} with base64url fields (webauthn-stamper). Verify runs the
//     WebAuthn §7.2 assertion checks: type "webauthn.get"; the challenge is
//     the UTF-8 bytes of lowercase hex SHA-256(body); origin and rpIdHash
//     against a WebAuthnPolicy (empty lists accept any); the UP flag; the
//     signature over authenticatorData ‖ SHA-256(clientDataJSON) with the
//     stored COSE key: ES256 (-7, DER, high S accepted), EdDSA (-8), RS256
//     (-257, PKCS#1 v1.5, 2048..8192-bit modulus). UV is not required
//     (webauthn-stamper asks for "preferred"). The counter is returned; what
//     a non-increasing counter means is the caller's policy.
//   - Passkey registration: ParseAttestation (WebAuthn §7.1). clientDataJSON
//     type "webauthn.create" with the registration challenge sent beside the
//     attestation; the attestation object (CBOR {fmt, attStmt, authData});
//     authData with UP and AT flags, attested credential data whose
//     credential id equals the one sent, no trailing bytes. Statements:
//     "none" must be empty; "packed" without x5c (self attestation) is
//     verified with the credential key and its alg must match. "packed" with
//     x5c and the certificate formats (tpm, android-key, android-safetynet,
//     fido-u2f, apple, compound) are accepted WITHOUT checking the statement
//     or its certificate chain, and the format is recorded: Latchkey does
//     not restrict authenticator models (there is no metadata service to
//     anchor the chains), so a chain check would prove nothing that the
//     challenge and the later assertions do not; AttestationFormat and
//     AAGUID let an operator audit or add such a policy later. Unknown
//     formats and ECDAA are rejected.
//   - X-Stamp-Attested (OTP and OAuth login, docs/wire.md §2b):
//     VerifyAttested checks the scheme and the P-256 DER signature over
//     SHA-256(body); the attestation token inside is verified elsewhere.
//   - A small strict CBOR decoder (RFC 8949) for attestation objects and
//     COSE keys, bounded in depth, items and allocation.
//   - Client stampers (P-256, secp256k1, Ed25519, EIP-191), PublicKeyHex and
//     GenerateKey, for the CLI, the load tool, the auth proxy and tests. The
//     stamptest subpackage is a software passkey authenticator for tests.
//
// # What it must never do
//
// Verify anything but the raw body bytes received (never a re-serialization);
// do I/O or logging; put private material in an error message (public keys
// and what is wrong are fine; every message is safe to show a client);
// cache a verification result. Its only mutable state is a bounded
// (4096-entry, random eviction) cache of parsed API public keys, filled only
// after a signature made with the key verified, since decompressing a point
// costs a square root, and the per-key P-256 tables some of those keys hold
// (p256tables.go): a cached P-256 key that the caller reported registered
// (APIKeyProof.Registered) and that verifies another signature gets a
// p256verify.Table, which verifies its later stamps in about half of
// crypto/ecdsa's CPU time with crypto/ecdsa's answers; at most 16 MiB of
// tables (210) and 50 builds a second. VerifyAPIKeyStandard never uses them (the crypto
// floor of latchkey bench). COSE keys are parsed per call (no square root).
//
// It does not look keys or credentials up, check expiry, timestamps or
// replay, or decide whether a caller may act: callers do, with the proof
// this package returns. Errors wrap ErrMalformed (cannot be parsed) or
// ErrUnverified (parsed, but does not prove what it claims).
package stamp
