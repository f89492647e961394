// Package otp serves the one-time-code activities: init_otp (every version),
// verify_otp (V2 with the HPKE encryptedOtpBundle, and the legacy plain code) and otp_login (V2
// with clientSignature, and the legacy version).
//
// Codes are handled like passwords: only an HMAC (custody Keyring.MAC, purpose "otp", bound to
// the code's id) is stored, compared in constant time; a code allows 3 attempts and is then
// burned; it lives 5 minutes by default (at most 10); a contact has at most 3 live codes and
// is sent at most 3 codes every 3 minutes by default. A wrong attempt is counted in the
// transaction that checked it, which commits with the failed activity
// (activity.FailKeepingWrites), so concurrent guesses cannot outrun the count.
//
// Delivery goes through the message outbox (package messages): the e-mail or SMS is queued,
// sealed, in the activity's transaction, next to the code, and sent once that transaction
// commits (before the activity is answered); a send that fails is retried from the outbox. So a
// code is sent exactly once per committed activity, never for one that rolled back or ran again,
// and no SMTP or SMS exchange ever holds the store's writer. Every queued code counts toward the
// contact's send rate.
//
// verify_otp answers with an OTP verification token (docs/wire.md §4.2): an ES256 JWT
// (single SHA-256, r‖s) signed by the server's OTP key, exp in milliseconds as a string,
// claims in Turnkey's order. Its id is a "verification_token" record so that otp_login uses it
// once. otp_login checks the token and the client signature over the TokenUsage message
// (§4.3), registers the session key as an expiring API key of the user with that contact, and
// answers with a session JWT signed by the notarizer (§4.1).
//
// credential.go serves the activities that answer with a credential bundle (§3.4): a fresh
// P-256 API key of the user whose private half leaves custody only encrypted to the client's
// targetPublicKey: init_otp_auth/otp_auth (in the result, after the code checks out),
// email_auth and init_user_email_recovery (by e-mail only, in the magic link or the body), and
// recover_user, which a recovery credential may stamp once to add a passkey to its own user.
//
// stamp_login (attested.go) logs in whoever stamped it. Attested.Resolve finds the caller of an
// X-Stamp-Attested request: the verification token must carry the stamp's key as public_key, be
// unused, and name by its contact the one user of the organization (or of one of its
// sub-organizations); an OIDC attestation names the user by its OAuth provider (iss, sub, aud)
// once the configured verifier accepts it with nonce = hex SHA-256 of the key's hex. The login
// uses the token up.
//
// Token payloads are kept ASCII and free of '>', '?' and '~' (core decodes them with an atob
// that drops '-' and '_') by escaping: those characters and every non-ASCII character of a
// claim are written as JSON \u escapes, which every JSON parser reads back as the same string.
package otp
