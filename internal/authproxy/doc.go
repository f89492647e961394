// Package authproxy is the auth proxy: the browser-facing, unstamped service (its own
// listener, --proxy-addr) that lets an organization's frontend sign users up and log them in
// without a backend of its own (spec "Auth proxy"; docs/wire.md §7).
//
// An organization's proxy configuration (Config) holds the operator's Settings, set by
// `latchkey proxy` and the operator dashboard, never by the public API. Enabling the proxy
// creates a proxy user and a proxy API key whose private half is sealed in the configuration
// and unsealed in memory per request; the proxy signs what it forwards with that key. The
// proxy user's permissions stop at sign-up, login and lookup.
//
// settings.go defines the settings and their validation, shared by the command line, the
// dashboard and the proxy itself. config.go keeps one Config per top-level organization (record
// kind auth_proxy_config, unique by organization) and its Manager: Enable creates the proxy
// user and a P-256 key of the proxy credential type (custody.NewAPIKey makes and seals the
// private half; Manager.Stamp signs with it through custody, so the key never leaves custody),
// Update changes settings, Disable deletes the proxy user and key. The activity engine, not
// this package, enforces what the proxy key may do (activity.ProxySubmitPaths and
// ProxyQueryPaths), so a bug here cannot widen it.
//
// server.go is the listener's HTTP service (Server): every operation of auth_proxy.swagger.json
// under /v1/, the X-Auth-Proxy-Config-ID header (any case), the allowed-origins check and
// CORS, and the proxy's own refusals (docs/auth-proxy.md lists their codes). flows.go turns
// each request into the activity or query a client would send, in the spellings of both the
// swagger and the spec (public_key, client_signature as hex, wallet as {path, curve}), stamps it
// with the proxy key and sends it to a Coordinator (coordinator.go: this process's API handler,
// or another Latchkey's over HTTP with --coordinator-url). A coordinator's error is passed to
// the client unchanged.
//
// The proxy reads the configuration from the store on every request: a change made by the
// command line or the dashboard applies to every running process at once.
package authproxy
