// Package authproxy is the auth proxy: the browser-facing, unstamped service (its own
// listener, --proxy-addr) that lets an organization's frontend sign users up and log them in
// without a backend of its own (spec "Auth proxy"; turnkey-wire.md §7).
//
// An organization's proxy configuration (Config) holds the operator's Settings, set by
// `latchkey proxy` and the operator dashboard, never by the public API. Enabling the proxy
// creates a proxy user and a proxy API key whose private half is sealed in the configuration
// and unsealed in memory per request; the proxy signs what it forwards with that key. The
// proxy user's permissions stop at sign-up, login and lookup.
//
// settings.go defines the settings and their validation, shared by the command line, the
// dashboard and the proxy itself.
package authproxy
