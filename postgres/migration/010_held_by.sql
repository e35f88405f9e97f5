-- 010_held_by: the provider incident that holds each waiting operation
-- now ('' for none), copied from the record by every save, so that an
-- incident's held operations are counted and found with one seek in a
-- small partial index instead of a read of every waiting record.

ALTER TABLE operations ADD COLUMN held_by text NOT NULL DEFAULT '';

UPDATE operations SET held_by = record->>'held_by'
 WHERE phase = 'waiting'
   AND record->>'next_poll_source' = 'provider_incident'
   AND coalesce(record->>'held_by', '') <> '';

CREATE INDEX operations_held_by ON operations (held_by, created_order) WHERE held_by <> '';
