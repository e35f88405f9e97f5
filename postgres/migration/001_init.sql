-- 001_init: operations with their leases, the append-only audit trail and
-- the chain head that serialises appends fleet-wide.
--
-- Every object is created in the store's schema (Options.Schema): Open
-- sets search_path to that schema alone, so no name here is qualified.
--
-- Times are TEXT COLLATE "C" in one fixed-width UTC form,
-- 2006-01-02T15:04:05.000000000Z, exactly as the SQLite driver keeps them:
-- exact to the nanosecond (timestamptz keeps microseconds, and the
-- conformance suite and the audit hashes need nanoseconds), byte order is
-- time order (hence the "C" collation, whatever the database's), and the
-- same years (0 to 9999) are accepted. The whole Operation is kept as JSON
-- in `record`; the other columns copy the fields that queries filter on.

CREATE TABLE operations (
    id                      text   NOT NULL PRIMARY KEY,
    created_order           bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    contract                text   NOT NULL,
    provider_job_id         text   NOT NULL,
    status_url              text   NOT NULL,
    credential_name         text   NOT NULL,
    fingerprint             text   NOT NULL,
    phase                   text   NOT NULL,
    reason                  text   NOT NULL,
    started_at              text   COLLATE "C" NOT NULL,
    deadline_at             text   COLLATE "C" NOT NULL,
    next_poll_at            text   COLLATE "C" NOT NULL,
    finished_at             text   COLLATE "C",
    status_requests_used    bigint NOT NULL,
    max_status_requests     bigint NOT NULL,
    transport_failures_used bigint NOT NULL,
    max_transport_failures  bigint NOT NULL,
    rate_limited_used       bigint NOT NULL,
    max_rate_limited        bigint NOT NULL,
    completed_polls         bigint NOT NULL,
    version                 bigint NOT NULL CHECK (version >= 1),
    record                  json   NOT NULL,
    -- The lease lives beside the record, never inside it: taking or freeing
    -- it changes neither the record nor its version.
    lease_owner             text,
    lease_epoch             bigint NOT NULL DEFAULT 0,
    lease_expires_at        text   COLLATE "C"
);

CREATE INDEX operations_phase ON operations (phase, created_order);
-- Due work for schedulers, oldest due first; created_order breaks ties so
-- that the order is stable and the index alone serves ORDER BY and LIMIT.
CREATE INDEX operations_due ON operations (next_poll_at, created_order) WHERE phase = 'waiting';

-- The audit trail: ONE hash chain across the whole store (docs/audit.md).
-- pos is the event's place in that chain, seq numbers an operation's own
-- events; payload is canonical JSON, or that JSON sealed, and the hash
-- covers these bytes as stored.
CREATE TABLE events (
    pos          bigint NOT NULL PRIMARY KEY CHECK (pos >= 1),
    operation_id text   NOT NULL REFERENCES operations (id),
    seq          bigint NOT NULL CHECK (seq >= 1),
    at           text   COLLATE "C" NOT NULL,
    kind         text   NOT NULL,
    payload      bytea  NOT NULL,
    prev_hash    text   NOT NULL,
    hash         text   NOT NULL,
    UNIQUE (operation_id, seq)
);

-- The head of the chain: one row, locked (SELECT ... FOR UPDATE) by every
-- transaction that appends events and updated in it, so appends are
-- serialised across every process sharing the database and pos is
-- gap-free. Transactions without events never touch it.
CREATE TABLE audit_head (
    id   integer NOT NULL PRIMARY KEY CHECK (id = 1),
    pos  bigint  NOT NULL CHECK (pos >= 0),
    hash text    NOT NULL
);
INSERT INTO audit_head (id, pos, hash) VALUES (1, 0, '');

-- Whether payloads are sealed, and with which key (by id; '' = plain). The
-- first append decides, once: a store never mixes plain and sealed events.
CREATE TABLE audit_settings (
    id          integer NOT NULL PRIMARY KEY CHECK (id = 1),
    seal_key_id text    NOT NULL
);

CREATE FUNCTION audit_settings_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'pollwarden: audit settings are fixed';
END
$$;

CREATE TRIGGER audit_settings_no_change BEFORE UPDATE OR DELETE ON audit_settings
    FOR EACH ROW EXECUTE FUNCTION audit_settings_fixed();
CREATE TRIGGER audit_settings_no_truncate BEFORE TRUNCATE ON audit_settings
    FOR EACH STATEMENT EXECUTE FUNCTION audit_settings_fixed();

-- The audit trail is append-only (R25); the hash chain detects tampering
-- from outside, these triggers stop it from inside. (The foreign key
-- already keeps an operation with a trail from being deleted or renamed.)
CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'pollwarden: audit events are append-only';
END
$$;

CREATE TRIGGER events_no_change BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();
