// Package api is the HTTP face of the activity API: POST /public/v1/submit/<op> and
// POST /public/v1/query/<op>, plus GET /.well-known/latchkey.json (the server's public keys) and
// GET /healthz.
//
// For every request it reads the raw body (size-limited), verifies the stamp over those exact
// bytes (X-Stamp, X-Stamp-WebAuthn, X-Stamp-Attested, or a read-only X-Session), resolves the
// caller from the organization the body names, and hands the request to the activity engine.
//
// Logins (stamp_login) are special in two ways, as @turnkey/core sends them: they may name the
// parent organization, and then run in the one sub-organization holding the stamping key or
// passkey; and they are the only requests an X-Stamp-Attested stamp (a session key attested by
// an OTP verification token or an OIDC token, resolved by the Attested hook) may sign. Every error leaves through apierr.Render. It never
// redirects (some clients refuse redirects) and accepts the doubled slash a base URL ending in "/"
// produces. It never logs bodies or stamps.
package api
