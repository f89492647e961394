// Package store is the persistence of Latchkey: a small interface (Store, Reader, Tx), the
// sentinel errors every driver returns (ErrNotFound, ErrAlreadyExists, ErrClosed, and
// ErrUnavailable for a database that could not be reached or used, with ErrOutcomeUnknown for a
// commit whose answer was lost), the optional capabilities a driver may offer (Exporter,
// RoleReader, Replicator, DatabaseClock), and nothing else. The drivers live beside it:
//
//   - sqlite: the default, one file, pure Go (modernc.org/sqlite), WAL with synchronous=FULL and
//     a single group-committing writer;
//   - postgres: the production and scale-out store (pgx), one READ COMMITTED transaction per
//     Update, retried on serialization failure and deadlock.
//
// Both keep the same three tables, created by numbered per-dialect migrations embedded in the
// driver: records (Kind, ID, OrgID, opaque Data, times), record_keys (the secondary keys
// written with a record; unique ones held by one record at a time) and activities (with a
// fingerprint unique among activities that have not failed).
//
// Both drivers also implement Exporter (not part of Store): every record of every kind with its
// keys, and every activity, in an order that does not depend on the database's collation. It
// is how `latchkey migrate-store` copies a deployment between drivers and verifies the copy.
//
// The store never interprets Data and never puts it in an error: Data may hold sealed
// secrets. Sealing happens above the store.
//
// Every driver passes the conformance suite in storetest, the specification of the
// behaviour the interface only names: ordering and paging (by count and by bytes, reading the
// Data of the rows kept only), filters binding each distinct value once, key replacement,
// fingerprint rules, savepoints, atomicity of failed Updates, and no lost updates under
// concurrent read-modify-write.
package store
