-- 002_webhook_outbox: the durable queue of webhook deliveries
-- (docs/webhooks.md). Its source is the audit trail: webhook_cursor says up
-- to which event position messages have been enqueued (-1: not started),
-- and is moved with a compare-and-set in the same transaction as the
-- messages it accounts for. Times are TEXT in the fixed-width UTC form of
-- 001. No secret is ever stored here: bodies hold the public outcome only,
-- and signatures are computed at send time.

CREATE TABLE webhook_cursor (
    id  INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    pos INTEGER NOT NULL CHECK (pos >= -1)
) STRICT;
INSERT INTO webhook_cursor (id, pos) VALUES (1, -1);

CREATE TABLE webhook_outbox (
    seq              INTEGER NOT NULL PRIMARY KEY,
    webhook_id       TEXT    NOT NULL,
    key              TEXT    NOT NULL,
    endpoint         TEXT    NOT NULL,
    event_pos        INTEGER NOT NULL,
    operation_id     TEXT    NOT NULL,
    type             TEXT    NOT NULL,
    body             BLOB    NOT NULL,
    created_at       TEXT    NOT NULL,
    status           TEXT    NOT NULL CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT    NOT NULL,
    claim_owner      TEXT,
    claim_expires_at TEXT,
    last_status      INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT    NOT NULL DEFAULT '',
    settled_at       TEXT,
    UNIQUE (endpoint, key)
) STRICT;

-- Due work for dispatchers, oldest due first.
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at, seq) WHERE status = 'pending';
