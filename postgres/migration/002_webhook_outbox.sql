-- 002_webhook_outbox: the durable queue of webhook deliveries
-- (docs/webhooks.md), as in the SQLite driver. webhook_cursor says up to
-- which event position messages have been enqueued (-1: not started) and
-- is moved with a compare-and-set in the same transaction as the messages
-- it accounts for, so replicas never enqueue an event twice or skip one.
-- Times are text COLLATE "C" in the fixed-width UTC form of 001. No secret
-- is stored here: bodies hold the public outcome only, and signatures are
-- computed at send time.

CREATE TABLE webhook_cursor (
    id  integer NOT NULL PRIMARY KEY CHECK (id = 1),
    pos bigint  NOT NULL CHECK (pos >= -1)
);
INSERT INTO webhook_cursor (id, pos) VALUES (1, -1);

CREATE TABLE webhook_outbox (
    seq              bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id       text    NOT NULL,
    key              text    NOT NULL,
    endpoint         text    NOT NULL,
    event_pos        bigint  NOT NULL,
    operation_id     text    NOT NULL,
    type             text    NOT NULL,
    body             bytea   NOT NULL,
    created_at       text    COLLATE "C" NOT NULL,
    status           text    NOT NULL CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts         bigint  NOT NULL DEFAULT 0,
    next_attempt_at  text    COLLATE "C" NOT NULL,
    claim_owner      text,
    claim_expires_at text    COLLATE "C",
    last_status      bigint  NOT NULL DEFAULT 0,
    last_error       text    NOT NULL DEFAULT '',
    settled_at       text    COLLATE "C",
    UNIQUE (endpoint, key)
);

-- Due work for dispatchers, oldest due first.
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at, seq) WHERE status = 'pending';
