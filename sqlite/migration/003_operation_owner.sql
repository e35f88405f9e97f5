-- 003_operation_owner: who created each operation (the token's name, or a
-- local process such as cli:alice), so that an agent's list is filtered in
-- the store, before its LIMIT. Rows made before this step keep '' (no
-- owner): only approvers, admins and scope-all agents see them.

ALTER TABLE operations ADD COLUMN owner TEXT NOT NULL DEFAULT '';

CREATE INDEX operations_owner ON operations (owner, created_order);
