-- 007_payload_digest: each event keeps the hex SHA-256 of its payload,
-- written on append, and its hash covers that digest instead of the
-- payload bytes (audit.Encode, "pollwarden-audit-v3"), so a pruned event,
-- whose payload is gone, still binds its kind, time, place and the digest
-- of what was dropped (docs/audit.md, "Pruning"). Events appended before
-- this migration keep '' and the older encoding. The append-only trigger
-- now also keeps the digest: a prune replaces the payload with 'pruned'
-- and changes nothing else.

ALTER TABLE events ADD COLUMN payload_digest TEXT NOT NULL DEFAULT '';

DROP TRIGGER events_no_update;

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
WHEN NOT (NEW.payload = CAST('pruned' AS BLOB) AND OLD.payload <> CAST('pruned' AS BLOB)
    AND NEW.pos = OLD.pos AND NEW.operation_id = OLD.operation_id AND NEW.seq = OLD.seq
    AND NEW.at = OLD.at AND NEW.kind = OLD.kind AND NEW.prev_hash = OLD.prev_hash AND NEW.hash = OLD.hash
    AND NEW.payload_digest = OLD.payload_digest
    AND (SELECT phase FROM operations WHERE id = OLD.operation_id) IN ('succeeded', 'failed', 'cancelled', 'expired'))
BEGIN
    SELECT RAISE(ABORT, 'pollwarden: audit events are append-only');
END;
