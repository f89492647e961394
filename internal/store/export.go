package store

import "context"

// Exporter enumerates everything a store holds, kind by kind, whatever the kind: it is how
// `latchkey migrate-store` copies a deployment from one store to another and then checks the
// copy. It is not part of Store (the domain packages never need it); the drivers' stores
// implement it (*sqlite.Store, *postgres.Store), and so does the Tx of a PostgreSQL Update, so a
// copy can be checked inside the transaction that wrote it, before it commits.
//
// Records, their keys and activities are all a store keeps: there is no other table to copy
// (the drivers' tests fail if a table appears that this interface does not cover).
//
// The callbacks run while the rows are read: fn must not use the same store, or the same Tx,
// until the method returns (it may write to another store). An error from fn stops the
// iteration and is returned as is.
type Exporter interface {
	// RecordKinds returns how many records of each kind the store holds, over every
	// organization. A kind with no record is absent.
	RecordKinds(ctx context.Context) (map[string]int, error)
	// EachRecord calls fn with every record of kind and its keys, records ordered by ID and
	// keys by (Name, Value), comparing bytes (not the database's collation), so the order is
	// the same on every driver. keys is nil for a record without keys.
	EachRecord(ctx context.Context, kind string, fn func(rec Record, keys []Key) error) error
	// EachActivity calls fn with every activity of every organization, ordered by ID
	// (comparing bytes).
	EachActivity(ctx context.Context, fn func(Activity) error) error
}
