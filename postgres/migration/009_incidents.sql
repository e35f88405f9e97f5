-- 009_incidents: one row per provider incident (pollwarden.Incident):
-- many operations under one quota key failing together (an outage), or
-- the key's credential refused. A row is inserted, and later closed, in
-- the transaction of the save that observed it (or of the approver's
-- decision that closed it), beside the key's row in quota_keys. The
-- columns copy what people filter and sort on; record holds the whole
-- incident as JSON (what failed, since when, the probes, the decision).
-- The id is "inc-" and 16 hex digits (policy.IncidentID). How many
-- operations an incident holds is counted when it is read, never kept.

CREATE TABLE incidents (
    id         TEXT NOT NULL PRIMARY KEY,
    key        TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('outage', 'credential')),
    opened_at  TEXT NOT NULL,
    closed_at  TEXT,
    what       TEXT NOT NULL,
    since      TEXT NOT NULL,
    last_probe TEXT NOT NULL DEFAULT '',
    record     TEXT NOT NULL
);

-- Open incidents first, then newest first; and the open one of a key.
CREATE INDEX incidents_order ON incidents (opened_at);
CREATE INDEX incidents_open_key ON incidents (key) WHERE closed_at IS NULL;
