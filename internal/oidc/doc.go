// Package oidc verifies OpenID Connect id_tokens from trusted issuers, mints
// Latchkey's own id_tokens, and runs the OAuth 2.0 authorization-code
// exchange (with PKCE) for providers that have no id_token (Discord, X).
//
// # What it owns
//
//   - Verifier: a compact JWS is parsed strictly (three unpadded base64url
//     segments, JSON object header and payload, no "crit", alg RS256, ES256
//     or EdDSA); the issuer must be on the allowlist by exact string match
//     (https, or http for loopback hosts when allowed); the issuer's discovery
//     document ({iss}/.well-known/openid-configuration) must name the same
//     issuer; its jwks_uri is fetched and both are cached per issuer for an
//     hour. A token whose kid is unknown triggers one JWKS refetch, at most
//     once a minute per issuer, so a flood of made-up kids cannot hammer the
//     issuer. Then the signature, aud, exp (one minute of leeway), iat, nbf and
//     the nonce are checked. Turnkey's nonce is the lowercase hex SHA-256 of
//     the client's public key hex (NonceFor).
//   - Issuer: mints ES256 id_tokens with a P-256 crypto.Signer it never sees
//     the private half of, and serves its discovery document and JWKS, so its
//     tokens verify through a Verifier that trusts its URL.
//   - OAuth2Provider: the token request (client_secret_post for Discord,
//     client_secret_basic for X) and the user-info request with the bearer
//     token.
//
// # Why no JWT library
//
// The three algorithms are a few lines each over crypto/rsa, crypto/ecdsa and
// crypto/ed25519, and JWK parsing (which golang-jwt does not do) is needed
// anyway. Owning the parser keeps it strict, small and fuzzed, and keeps the
// dependency list short.
//
// # What it must never do
//
//   - Put a token, a client secret, an access token or an authorization code
//     into an error or a log line.
//   - Trust a key that did not come from the token's own (allowlisted)
//     issuer, or accept alg "none" or an algorithm that does not match the
//     key's type.
package oidc
