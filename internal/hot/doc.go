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
//     pg_notify inside the transaction, and Listen (run by each process) bumps them on
//     arrival. While the listening connection is down, or has not proven itself alive within
//     the last second, nothing is served: staleness is bounded by the notification's delivery
//     and never exceeds one second.
//   - On SQLite, the commands that write beside a running serve (latchkey proxy, access,
//     operator, keyring) are other processes with their own connections. The store's writer
//     reads PRAGMA data_version on its own connection before every transaction it runs, and
//     WatchSQLite makes it do so at least every 100 ms when idle; a change there means another
//     process committed, and the whole cache is dropped.
//
// A cached value is shared between requests: callers must treat it as immutable and copy
// what they hand on to code that may modify it.
package hot
