// Package dashboard is the operator dashboard, served by `latchkey serve` on its own
// listener (--dashboard-addr): server-rendered pages (html/template, assets embedded, no CDN) over
// the store, showing only public data — no key material, mnemonic, one-time code or proxy key
// is ever read into a page's model, because the pages are built from view structs that have no
// field for them.
//
// Operators are accounts in the store (operators.go): e-mail and an argon2id hash (RFC 9106,
// t=2, m=19 MiB, p=1, 16-byte salt, 32-byte tag). Sign-in sets a session cookie (random 32
// bytes, HttpOnly, SameSite=Strict, Secure under TLS, 12 hours); sessions live in the store
// (signin.go). Every form carries the session's CSRF token, checked in constant time. Failed
// sign-ins are limited per e-mail and per client address. Every change an operator makes is
// written to an audit record, listed, filtered and exported on /audit (audit.go); the latchkey
// command audits its own changes through WriteAudit.
//
// /charts (charts.go) draws activities from one bounded store query and API requests from a
// fixed-size in-process ring (requests.go, fed by Server.Observe) as server-rendered SVG;
// /failed and the activity page are in activity.go, /health in health.go.
//
// The auth proxy settings page edits an organization's proxy through the same Manager as
// `latchkey proxy`; changes apply to the running proxy at once.
package dashboard
