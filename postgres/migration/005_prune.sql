-- 005_prune: `pollwarden ops prune` removes a finished operation's record
-- and replaces its events' payloads with 'pruned', keeping each event's
-- place, kind, time and hashes, so the one chain still verifies
-- (docs/audit.md, "Pruning"). The foreign key from events to operations
-- goes; the triggers below keep what it guarded, and the append-only
-- trigger allows exactly one change: a finished operation's payload
-- replaced by 'pruned', every other column as it was. The functions look
-- at the other table, so each keeps the schema it was made in
-- (SET search_path FROM CURRENT) whoever's session fires it.

ALTER TABLE events DROP CONSTRAINT events_operation_id_fkey;

CREATE OR REPLACE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.payload = convert_to('pruned', 'UTF8') AND OLD.payload <> convert_to('pruned', 'UTF8')
        AND NEW.pos = OLD.pos AND NEW.operation_id = OLD.operation_id AND NEW.seq = OLD.seq
        AND NEW.at = OLD.at AND NEW.kind = OLD.kind AND NEW.prev_hash = OLD.prev_hash AND NEW.hash = OLD.hash
        AND (SELECT phase FROM operations WHERE id = OLD.operation_id) IN ('succeeded', 'failed', 'cancelled', 'expired') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'pollwarden: audit events are append-only';
END
$$;

-- An event is appended to an operation that exists.
CREATE FUNCTION events_need_operation() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM operations WHERE id = NEW.operation_id) THEN
        RAISE EXCEPTION 'pollwarden: an event needs its operation';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER events_need_operation BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_need_operation();

-- An operation's record goes only once its events are pruned, and an
-- operation with a trail keeps its id.
CREATE FUNCTION operations_keep_trail() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM events WHERE operation_id = OLD.id AND payload <> convert_to('pruned', 'UTF8')) THEN
        RAISE EXCEPTION 'pollwarden: audit events are append-only';
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.id IS DISTINCT FROM OLD.id AND EXISTS (SELECT 1 FROM events WHERE operation_id = OLD.id) THEN
        RAISE EXCEPTION 'pollwarden: audit events are append-only';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER operations_keep_trail BEFORE UPDATE OF id OR DELETE ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_keep_trail();
