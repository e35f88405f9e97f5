-- 005_prune: `pollwarden ops prune` removes a finished operation's record
-- and replaces its events' payloads with 'pruned', keeping each event's
-- place, kind, time and hashes, so the one chain still verifies
-- (docs/audit.md, "Pruning"). The events table is rebuilt without its
-- foreign key to operations (SQLite cannot drop one in place); the
-- triggers below keep what the key guarded, and the append-only trigger
-- allows exactly one change: a finished operation's payload replaced by
-- 'pruned', every other column as it was.

DROP TRIGGER events_no_update;
DROP TRIGGER events_no_delete;
DROP TRIGGER operations_keep_trail_delete;
DROP TRIGGER operations_keep_trail_rename;

CREATE TABLE events_new (
    pos          INTEGER NOT NULL PRIMARY KEY CHECK (pos >= 1),
    operation_id TEXT    NOT NULL,
    seq          INTEGER NOT NULL CHECK (seq >= 1),
    at           TEXT    NOT NULL,
    kind         TEXT    NOT NULL,
    payload      BLOB    NOT NULL,
    prev_hash    TEXT    NOT NULL,
    hash         TEXT    NOT NULL,
    UNIQUE (operation_id, seq)
) STRICT;

INSERT INTO events_new (pos, operation_id, seq, at, kind, payload, prev_hash, hash)
    SELECT pos, operation_id, seq, at, kind, payload, prev_hash, hash FROM events ORDER BY pos;

DROP TABLE events;
ALTER TABLE events_new RENAME TO events;

-- An event is appended to an operation that exists (the foreign key's
-- first job).
CREATE TRIGGER events_need_operation BEFORE INSERT ON events
WHEN NOT EXISTS (SELECT 1 FROM operations WHERE id = NEW.operation_id)
BEGIN
    SELECT RAISE(ABORT, 'pollwarden: an event needs its operation');
END;

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
WHEN NOT (NEW.payload = CAST('pruned' AS BLOB) AND OLD.payload <> CAST('pruned' AS BLOB)
    AND NEW.pos = OLD.pos AND NEW.operation_id = OLD.operation_id AND NEW.seq = OLD.seq
    AND NEW.at = OLD.at AND NEW.kind = OLD.kind AND NEW.prev_hash = OLD.prev_hash AND NEW.hash = OLD.hash
    AND (SELECT phase FROM operations WHERE id = OLD.operation_id) IN ('succeeded', 'failed', 'cancelled', 'expired'))
BEGIN
    SELECT RAISE(ABORT, 'pollwarden: audit events are append-only');
END;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'pollwarden: audit events are append-only');
END;

-- An operation's record goes only once its events are pruned (the
-- foreign key's second job).
CREATE TRIGGER operations_keep_trail_delete BEFORE DELETE ON operations
WHEN EXISTS (SELECT 1 FROM events WHERE operation_id = OLD.id AND payload <> CAST('pruned' AS BLOB))
BEGIN
    SELECT RAISE(ABORT, 'pollwarden: audit events are append-only');
END;

CREATE TRIGGER operations_keep_trail_rename BEFORE UPDATE OF id ON operations
WHEN OLD.id IS NOT NEW.id AND EXISTS (SELECT 1 FROM events WHERE operation_id = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'pollwarden: audit events are append-only');
END;
