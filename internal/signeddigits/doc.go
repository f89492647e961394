// Package signeddigits recodes a 256-bit scalar into signed base-2^w digits, the form a
// windowed multiplication adds from a table of d·2^(w·i)·P for d in 1..2^(w-1): each digit is in
// [-(2^(w-1)-1), 2^(w-1)], a negative one adding the negated point, and Σ dᵢ·2^(w·i) = k.
// internal/p256verify (a key's table, 5-bit digits) and internal/custody/hd (the secp256k1
// generator's table, 11-bit digits) both multiply this way.
package signeddigits
