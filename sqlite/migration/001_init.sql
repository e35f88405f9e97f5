-- 001_init: operations with their leases, and the append-only audit trail.
--
-- Times are TEXT in one fixed-width UTC form, 2006-01-02T15:04:05.000000000Z,
-- so that they compare correctly as text (due-time queries) and read well in
-- the sqlite3 shell. The whole Operation is kept as JSON in `record`; the
-- other columns copy the fields that queries and people filter on.

CREATE TABLE operations (
    id                      TEXT    NOT NULL PRIMARY KEY,
    created_order           INTEGER NOT NULL UNIQUE,
    contract                TEXT    NOT NULL,
    provider_job_id         TEXT    NOT NULL,
    status_url              TEXT    NOT NULL,
    credential_name         TEXT    NOT NULL,
    fingerprint             TEXT    NOT NULL,
    phase                   TEXT    NOT NULL,
    reason                  TEXT    NOT NULL,
    started_at              TEXT    NOT NULL,
    deadline_at             TEXT    NOT NULL,
    next_poll_at            TEXT    NOT NULL,
    finished_at             TEXT,
    status_requests_used    INTEGER NOT NULL,
    max_status_requests     INTEGER NOT NULL,
    transport_failures_used INTEGER NOT NULL,
    max_transport_failures  INTEGER NOT NULL,
    rate_limited_used       INTEGER NOT NULL,
    max_rate_limited        INTEGER NOT NULL,
    completed_polls         INTEGER NOT NULL,
    version                 INTEGER NOT NULL CHECK (version >= 1),
    updated_at              TEXT,
    record                  TEXT    NOT NULL CHECK (json_valid(record)),
    -- The lease lives beside the record, never inside it: taking or freeing
    -- it changes neither the record nor its version.
    lease_owner             TEXT,
    lease_epoch             INTEGER NOT NULL DEFAULT 0,
    lease_expires_at        TEXT
) STRICT;

CREATE INDEX operations_phase ON operations (phase, created_order);
-- Due work for schedulers, oldest due first; created_order breaks ties so
-- that the order is stable and the index alone serves ORDER BY and LIMIT.
CREATE INDEX operations_due ON operations (next_poll_at, created_order) WHERE phase = 'waiting';

-- The audit trail: ONE hash chain across the whole store (docs/audit.md).
-- pos is the event's place in that chain (the rowid, so a walk by pos is a
-- plain table scan); seq numbers an operation's own events. payload is the
-- event's data as canonical JSON, or that JSON sealed (encrypted) when the
-- store seals payloads; the hash covers these bytes as stored.
CREATE TABLE events (
    pos          INTEGER NOT NULL PRIMARY KEY CHECK (pos >= 1),
    operation_id TEXT    NOT NULL REFERENCES operations (id),
    seq          INTEGER NOT NULL CHECK (seq >= 1),
    at           TEXT    NOT NULL,
    kind         TEXT    NOT NULL,
    payload      BLOB    NOT NULL,
    prev_hash    TEXT    NOT NULL,
    hash         TEXT    NOT NULL,
    UNIQUE (operation_id, seq)
) STRICT;

-- Whether payloads are sealed, and with which key (by id; '' = plain). The
-- first append decides, once: a store never mixes plain and sealed events.
CREATE TABLE audit_settings (
    id          INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    seal_key_id TEXT    NOT NULL
) STRICT;

CREATE TRIGGER audit_settings_no_update BEFORE UPDATE ON audit_settings
BEGIN
    SELECT RAISE(ABORT, 'pollwarden: audit settings are fixed');
END;

CREATE TRIGGER audit_settings_no_delete BEFORE DELETE ON audit_settings
BEGIN
    SELECT RAISE(ABORT, 'pollwarden: audit settings are fixed');
END;

-- The audit trail is append-only (R25); the hash chain detects tampering
-- from outside, these triggers stop it from inside.
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'pollwarden: audit events are append-only');
END;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'pollwarden: audit events are append-only');
END;

-- An operation with a trail keeps its id and its row, even for a connection
-- that did not turn foreign keys on.
CREATE TRIGGER operations_keep_trail_delete BEFORE DELETE ON operations
WHEN EXISTS (SELECT 1 FROM events WHERE operation_id = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'pollwarden: audit events are append-only');
END;

CREATE TRIGGER operations_keep_trail_rename BEFORE UPDATE OF id ON operations
WHEN OLD.id IS NOT NEW.id AND EXISTS (SELECT 1 FROM events WHERE operation_id = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'pollwarden: audit events are append-only');
END;
