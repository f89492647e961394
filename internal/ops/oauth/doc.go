// Package oauth serves the OAuth and OIDC activities (docs/wire.md §2b, §4, §7):
//
//   - oauth_login: an id_token whose nonce is the hex SHA-256 of the session key names, by its
//     (issuer, subject, audience), a user of the organization; the session is issued as every
//     login's is (internal/ops/login). oauth: the same check, answered with a credential bundle
//     for targetPublicKey.
//   - create_oauth_providers / delete_oauth_providers / get_oauth_providers: the identities
//     linked to a user, from verified id_tokens.
//   - create/update/delete_oauth2_credential, get_oauth2_credential, list_oauth2_credentials: an
//     organization's OAuth 2.0 client (Discord or X). The client secret arrives encrypted to the
//     server's client-secrets key (@turnkey/crypto encryptOauth2ClientSecret) and is sealed at
//     once; the echoed encryptedClientSecret is that envelope, never the secret.
//   - oauth2_authenticate: the authorization-code exchange with PKCE at the provider (done before
//     the activity's transaction, so the store never waits on the network), after which Latchkey
//     mints its own id_token (issuer <api>/oidc, subject "<provider>:<user id>", audience the
//     client id, the caller's nonce) that oauth_login and sign-up accept like any other.
//
// id_tokens are verified by the server's verifier (internal/oidc): signature through the
// issuer's discovery document and JWKS, a trusted issuer, exp, and the nonce where one applies.
package oauth
