-- Records: every resource the domain packages keep, Data opaque to the store.
-- Times are unix nanoseconds (UTC); the zero time is -9223372036854775808.
CREATE TABLE records (
    kind       TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    org_id     TEXT    NOT NULL,
    data       BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID; -- clustered on the key: one B-tree less to write per insert
CREATE INDEX records_kind_org_created ON records (kind, org_id, created_at, id);

-- Secondary keys of records, replaced with their record on every Put. The primary key also
-- serves replacement and deletion by (kind, id).
CREATE TABLE record_keys (
    name   TEXT    NOT NULL,
    value  TEXT    NOT NULL,
    kind   TEXT    NOT NULL,
    id     TEXT    NOT NULL,
    org_id TEXT    NOT NULL,
    uniq   INTEGER NOT NULL,
    PRIMARY KEY (kind, id, name, value)
) WITHOUT ROWID;
CREATE INDEX record_keys_name_value ON record_keys (name, value);
CREATE UNIQUE INDEX record_keys_unique ON record_keys (name, value) WHERE uniq;

-- Activities. A NULL fingerprint holds nothing; a FAILED activity does not hold its own.
CREATE TABLE activities (
    id          TEXT    NOT NULL PRIMARY KEY,
    org_id      TEXT    NOT NULL,
    fingerprint TEXT,
    status      TEXT    NOT NULL,
    type        TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    data        BLOB    NOT NULL
);
CREATE UNIQUE INDEX activities_fingerprint ON activities (fingerprint)
    WHERE status <> 'ACTIVITY_STATUS_FAILED';
CREATE INDEX activities_org_created ON activities (org_id, created_at DESC, id DESC);
