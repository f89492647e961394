// Package admission bounds what the requests in process at once may hold, on every listener,
// before any handler sees them (docs/limits.md §1).
//
// A Gate counts the request-body bytes the process holds. Its middleware reads each request's
// body itself, before the handler: a body whose declared length is over the listener's limit is
// refused unread (400), a body that would take the process over its bound of bytes in flight is
// refused at once with 503 (before reading, when the length is declared; as soon as the bound is
// reached, when it is not), and the bytes stay counted until the handler returns, since what a
// handler builds from a body is bounded by a multiple of it. Requests without a body (health
// checks, metrics, the dashboard's pages) are never refused for load, so the process stays
// observable while it sheds work.
//
// The body read here is the one the handler reads (Body gives it without a copy): it is read
// once, into a buffer of its declared size.
package admission
