// Package outbound keeps network calls out of store transactions. store.Update's contract is
// that its function has no effect outside the transaction and may run more than once; and on
// SQLite every write waits for the one writer, so a slow SMTP server inside a transaction
// stalls every organization's activities. The activity engine marks the context a handler gets
// inside a write transaction (Forbid); every outbound client (the e-mail and SMS senders, the
// chain RPC client, the OIDC key fetcher) calls Check first and fails loudly instead of making
// the call. Handlers send after commit (activity.Exec.AfterCommit, the message outbox) or fetch
// before the transaction (Operation.Prepare, the OIDC prefetch).
package outbound
