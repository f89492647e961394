package store

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors every driver returns (wrapped or not; test with errors.Is).
var (
	// ErrNotFound: the record, activity or key does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrAlreadyExists: a record with that (kind, id) exists, or a unique key is taken.
	ErrAlreadyExists = errors.New("store: already exists")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
)

// Record is one stored resource: an organization, a user, an API key, a wallet, a tag, a server
// key... The store does not interpret Data (JSON, possibly holding sealed fields); the domain
// packages above it do.
type Record struct {
	Kind  string // e.g. "organization", "user", "api_key"
	ID    string // unique within Kind (UUIDs in practice)
	OrgID string // owning organization; for an organization, its parent ("" for top-level)
	Data  []byte // opaque to the store
	// CreatedAt is set by the caller on first Put and kept as given; UpdatedAt on every Put.
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Key is a secondary index entry of a record, written and replaced with the record by Put.
// Lookups by (Name, Value) find the records carrying it. A Unique key may be carried by one record
// at a time: a Put that would give it a second record fails with ErrAlreadyExists.
type Key struct {
	Name   string // e.g. "api_key.public_key", "user.email", "user_tag.name"
	Value  string
	Unique bool
}

// Ref names a record found by a key lookup.
type Ref struct {
	Kind  string
	ID    string
	OrgID string
}

// ListOptions pages through the records of one kind in one organization, ordered by
// (CreatedAt, ID), ascending unless Desc.
type ListOptions struct {
	Limit  int    // 0 means no limit
	After  string // id of a record: return only those that come after it in the order
	Before string // id of a record: return only those that come before it in the order
	Desc   bool
	// MaxBytes, when positive, bounds the page by the bytes of its records' Data as well as by
	// Limit. The page takes records in the order it reads them (from After; backwards from
	// Before when there is no After) while the sum of their Data stays within MaxBytes, and
	// ends before the first that would take it over; its first record is always returned,
	// however large, so paging on from its last record always makes progress. The drivers read
	// the sizes first and then the Data of the records kept only, so records past the cut are
	// never read whole. A record that grows between the two reads may take the page over
	// MaxBytes by its growth.
	MaxBytes int
	// Key, when its Name is set, keeps only the records carrying the key (Name, Value) (Unique
	// is ignored): the accounts of one wallet, paged in the same order as the organization's.
	// The page's cost does not grow with the records of the kind that do not carry it beyond
	// reading their index entries.
	Key Key
	// OwnerOf, when its Name is set, keeps only the records that own (as their OrgID) a record
	// carrying the key (Name, Value) (Unique is ignored): listing a parent's organizations, the
	// sub-organizations holding a user of a given name, a page at a time.
	OwnerOf Key
}

// Activity is one stored activity. Data is the activity JSON (opaque to the store); the other
// fields are kept beside it so they can be searched.
type Activity struct {
	ID          string
	OrgID       string
	Fingerprint string // unique among activities whose Status is not ActivityStatusFailed
	Status      string
	Type        string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Data        []byte
}

// ActivityStatusFailed is the status whose activities do not hold their fingerprint: a failed
// request may be sent again with the same bytes.
const ActivityStatusFailed = "ACTIVITY_STATUS_FAILED"

// ActivityFilter selects and pages activities of one organization, newest first
// (CreatedAt desc, ID desc). After/Before are activity ids, as in ListOptions.
type ActivityFilter struct {
	// Statuses and Types keep the activities with one of the values (empty: any). Repeated
	// values count once; more than MaxFilterValues distinct values are refused.
	Statuses []string
	Types    []string
	Limit    int // 0: no limit
	After    string
	Before   string
	// Since, when not zero, keeps only activities created at or after it.
	Since time.Time
	// MaxBytes, when positive, bounds ListActivities' page by the bytes of its Data as well as
	// by Limit, as ListOptions.MaxBytes does. ListActivityHeads reads no Data and ignores it.
	MaxBytes int
}

// MaxFilterValues bounds the distinct values of ActivityFilter.Statuses and of
// ActivityFilter.Types: each is one SQL parameter, and a database refuses a statement with too
// many (SQLite: 32,766). There are a handful of activity statuses and about two hundred
// activity types, so a real filter names far fewer; callers facing a client bound the count
// themselves, before the work, and refuse more with a 400.
const MaxFilterValues = 512

// ErrTooManyValues: a filter named more than MaxFilterValues distinct values.
var ErrTooManyValues = errors.New("store: too many filter values")

// ActivityHead is an activity without its Data and Fingerprint: what lists, counts and charts
// of activities draw (times, status, type). Size is the length of its Data, which was not read.
type ActivityHead struct {
	ID        string
	OrgID     string
	Status    string
	Type      string
	CreatedAt time.Time
	UpdatedAt time.Time
	Size      int
}

// Reader reads. Inside Update it sees the transaction's own writes.
type Reader interface {
	// Get returns the record, or ErrNotFound. Inside Update it locks the record against other
	// writers until the transaction ends (SELECT ... FOR UPDATE on PostgreSQL).
	Get(ctx context.Context, kind, id string) (Record, error)
	// List returns the records of kind owned by orgID.
	List(ctx context.Context, kind, orgID string, opts ListOptions) ([]Record, error)
	// Count returns how many records of kind orgID owns, counting no further than atMost
	// (atMost <= 0: count them all). Limit checks pass the limit, so their cost stays bounded
	// however many records exist. Inside Update, a Count serialises with every other
	// transaction counting the same kind and organization until commit, so a limit checked by
	// counting before an insert holds under concurrency (SQLite has one writer; PostgreSQL
	// takes a transaction-scoped advisory lock on (kind, organization) first).
	Count(ctx context.Context, kind, orgID string, atMost int) (int, error)
	// Lookup returns the records carrying the key (name, value), in no particular order.
	Lookup(ctx context.Context, name, value string) ([]Ref, error)
	// GetActivity returns an activity by id, or ErrNotFound.
	GetActivity(ctx context.Context, id string) (Activity, error)
	// GetActivityByFingerprint returns the activity holding the fingerprint (not FAILED), or
	// ErrNotFound.
	GetActivityByFingerprint(ctx context.Context, fingerprint string) (Activity, error)
	// ListActivities returns the activities of an organization ("" orgID: of all
	// organizations).
	ListActivities(ctx context.Context, orgID string, f ActivityFilter) ([]Activity, error)
	// ListActivityHeads is ListActivities without the activities' Data: it reads only the
	// columns an ActivityHead holds, so its cost does not grow with the size of the activities.
	ListActivityHeads(ctx context.Context, orgID string, f ActivityFilter) ([]ActivityHead, error)
	// CountActivities counts the activities of an organization matching the filter's
	// Statuses, Types and Since ("" orgID: of all organizations).
	CountActivities(ctx context.Context, orgID string, f ActivityFilter) (int, error)
}

// Tx writes. Everything written in one Update commits together or not at all.
type Tx interface {
	Reader
	// Put inserts or replaces the record and replaces its keys with keys.
	Put(ctx context.Context, rec Record, keys ...Key) error
	// Insert is Put that fails with ErrAlreadyExists when (Kind, ID) exists.
	Insert(ctx context.Context, rec Record, keys ...Key) error
	// Delete removes the record and its keys; ErrNotFound if absent.
	Delete(ctx context.Context, kind, id string) error
	// PutActivity inserts or replaces an activity. A second non-FAILED activity with the same
	// fingerprint fails with ErrAlreadyExists.
	PutActivity(ctx context.Context, a Activity) error
	// Savepoint runs fn; if fn fails, its writes are undone and the rest of the transaction
	// carries on. fn's error is returned.
	Savepoint(ctx context.Context, fn func(Tx) error) error
	// Lock makes the transactions that lock the same name run one after the other from this
	// call until commit or rollback: a check over several records followed by a write (at
	// most N credentials per user, N codes per contact) locks a name for what it checks.
	// SQLite has one writer, so there it costs nothing; PostgreSQL takes a transaction-scoped
	// advisory lock.
	Lock(ctx context.Context, name string) error
	// NoLock returns a Reader inside this transaction (it sees the transaction's own writes)
	// whose Get takes no row lock, for records the transaction reads but does not write: the
	// wallet and account an activity signs with, which every signing activity of an
	// organization reads. On PostgreSQL, Get inside Update locks the row until commit, so such
	// shared rows would make concurrent activities queue behind each other's commits; read them
	// through NoLock and keep Get for read-modify-write. SQLite's single writer needs no locks:
	// there it is the Tx itself.
	NoLock() Reader
}

// Store is the persistence of Latchkey: SQLite (embedded) or PostgreSQL.
type Store interface {
	// View runs fn over committed data. Its reads need not be one snapshot.
	View(ctx context.Context, fn func(Reader) error) error
	// Update runs fn in one transaction and commits it durably (fsync) before returning nil.
	// Concurrent Updates may share one commit. fn may be run more than once (after a
	// serialization failure or deadlock), so it must have no effects outside the Tx. If fn
	// fails nothing it wrote is kept and its error is returned.
	Update(ctx context.Context, fn func(Tx) error) error
	// Ping checks the database is reachable.
	Ping(ctx context.Context) error
	// Dialect names the driver: "sqlite" or "postgres".
	Dialect() string
	Close() error
}
