// Package p256verify verifies ECDSA P-256 signatures against one public key many times, faster
// than crypto/ecdsa can, by precomputing multiples of the key once.
//
// # What it owns
//
// A Table holds, for a public key Q, the points d·32^i·Q for every 5-bit window i of a 256-bit
// scalar (52 windows) and d in 1..16: 832 points, Bytes (78 KiB) of memory. Verification
// (FIPS 186-5 §6.4.2, as crypto/ecdsa does it) computes w = s⁻¹, u1 = e·w and u2 = r·w mod n,
// then R = u1·G + u2·Q. The variable-base half, u2·Q, which costs crypto/ecdsa most of a
// verification, becomes 52 table look-ups and additions over u2's signed base-32 digits (each
// in [-16, 16]); u1·G uses filippo.io/nistec's fixed-base tables. The checks are
// crypto/ecdsa's, in the same order: the DER signature parsed with cryptobyte exactly as
// crypto/ecdsa parses it; r and s in [1, n-1]; the hash's leftmost 256 bits taken as an
// integer and reduced mod n; R not the point at infinity; R's x coordinate reduced mod n
// equal to r.
//
// Verification uses only public data (the key, the message's hash, the signature), so the
// scalar arithmetic and the digit walk are variable-time; building a Table is too.
//
// # What it must never do
//
// Accept a signature crypto/ecdsa rejects or reject one it accepts: a difference here is an
// authentication bypass. The Wycheproof ecdsa_secp256r1_sha256 vectors (testdata/) and a
// differential fuzz target against crypto/ecdsa guard that. It holds no cache and no state
// beyond the Tables it returns; callers decide which keys deserve one (a Table costs Bytes of
// memory and about 800 additions to build).
package p256verify
