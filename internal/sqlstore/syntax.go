package sqlstore

// The two dialects' SQL side by side, so that a reader sees at once where
// they differ (and that it is nowhere else).

// SQLite is the SQL of one SQLite file: a write holds the file's only
// write lock (BEGIN IMMEDIATE), so rows need no locks and the chain's head
// is read from events; created_order is numbered under that lock; the
// planner, without statistics, is told which index to use; claims and
// saves are grouped into multi-row statements (see runGroupLocal).
func SQLite() Syntax {
	return Syntax{
		Name:         "sqlite",
		GroupWrites:  true,
		Linger:       localLinger,
		LastState:    "coalesce(json_extract(record, '$.last_state'), '')",
		CreatedOrder: "(SELECT coalesce(max(created_order), 0) + 1 FROM operations)",
		Hints:        true,
		MigrationsTable: `CREATE TABLE IF NOT EXISTS pollwarden_migrations (
			version INTEGER NOT NULL PRIMARY KEY,
			name TEXT NOT NULL,
			applied_at TEXT NOT NULL) STRICT`,
	}
}

// PostgreSQL is the SQL of a database shared by replicas: a write locks
// the rows it checks and the chain's head row, a process groups its
// steps' writes so the head is locked once per group, claimers (of
// operations and of outbox messages) pass each other's locked rows, and
// created_order is an identity column.
func PostgreSQL() Syntax {
	return Syntax{
		Name:         "postgres",
		LastState:    "coalesce(record->>'last_state', '')",
		ForUpdate:    " FOR UPDATE",
		SkipLocked:   " FOR UPDATE SKIP LOCKED",
		HeadRow:      true,
		GroupWrites:  true,
		EventArrays:  true,
		ArrayUpdates: true,
		MigrationsTable: `CREATE TABLE IF NOT EXISTS pollwarden_migrations (
			version    integer     NOT NULL PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`,
	}
}
