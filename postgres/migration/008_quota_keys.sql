-- 008_quota_keys: one row per quota key (pollwarden.QuotaKey: a
-- credential's secret reference, never the secret, or a contract's
-- name), holding pollwarden.KeyState as JSON: the shared quota's state,
-- the provider's learned hold and remaining count, the bounded record of
-- who waits, and the key's incident. Every claim under the key locks and
-- writes it in the claim's own transaction, so every process and replica
-- on the store shares it.

CREATE TABLE quota_keys (
    key        TEXT NOT NULL PRIMARY KEY,
    version    BIGINT NOT NULL,
    state      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
