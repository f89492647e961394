// Package hot holds the rarely-changing records every request reads (an organization, its
// parent, an API key and its user; the wallet account a signature is made with) in memory,
// decoded, and drops them exactly when the data under them changes.
//
// Versions keeps one version per organization. A cached value is stored with a Token: the
// versions of the organizations it was read from, captured before the reads. It is served only
// while those versions are unchanged, so the cache never needs to know which record a value
// came from, only which organizations.
//
// Writes are seen three ways:
//
//   - In this process, Wrap puts a store.Store behind a decorator whose Update notes the
//     organizations whose records of the watched kinds a transaction writes. From the first
//     such write until after the commit has returned, those organizations are "being
//     written": nothing of theirs is served or stored. Their versions are bumped before Update
//     returns, so a key revoked by a committed transaction is refused by the very next request.
//   - Across PostgreSQL processes, the same Update sends the organizations' ids with
//     pg_notify inside the transaction, and every process listens on a connection of its own
//     (postgres.Listen) and bumps them on arrival. A cached value is served only after a round
//     trip on that connection begun after the request asked (postgres.Barrier, one round trip
//     shared by the requests waiting): PostgreSQL signals the listening backend before the
//     notifying commit returns, and the backend sends the notification before it answers the
//     round trip, so a change committed by another process before the request came is applied
//     before the request is answered. A request (Versions.PerRequest) waits at the barrier
//     once, before its first cached read; its later reads need no second round trip. While
//     the connection is down, or has not completed a round trip within the last second,
//     nothing is served or stored; on reconnection everything cached is dropped
//     (notifications sent meanwhile are lost).
//   - On SQLite, the commands that write beside a running serve (latchkey proxy, access,
//     operator, keyring) are other processes with their own connections. The store's writer
//     reads PRAGMA data_version on its own connection at the start of every transaction it
//     runs, and Watch makes it run one at least every 100 ms (SQLitePoll) when idle; a change
//     means another process committed, and the whole cache is dropped. This bounds, rather
//     than removes, staleness after such a write: data_version is per connection and moves
//     with this process's own commits on every other connection, so it cannot be checked per
//     request without a writer transaction.
//
// A cached value is shared between requests: callers must treat it as immutable and copy
// what they hand on to code that may modify it.
package hot
