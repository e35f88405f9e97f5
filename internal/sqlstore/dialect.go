package sqlstore

import (
	"context"
	"errors"
	"time"
)

// ErrNoRows is what a Row's Scan returns when the query found nothing; a
// driver maps its client's own value to it.
var ErrNoRows = errors.New("no rows in result set")

// Row is one row of a query (database/sql's and pgx's both fit).
type Row interface{ Scan(dest ...any) error }

// Rows is the cursor of a query.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Stmt is one statement and its arguments, for Querier.Batch.
type Stmt struct {
	SQL  string
	Args []any
}

// Querier runs statements written with "?" placeholders (a driver
// rewrites them into its own). A write transaction is one; so is the
// store's connection pool, for reads.
type Querier interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// Batch runs the statements in order (in one round trip where the
	// client can).
	Batch(ctx context.Context, stmts []Stmt) error
}

// Dialect is what a driver brings to the shared store.
type Dialect interface {
	// Write runs fn in one write transaction and commits it. fn may run
	// more than once (a retried or regrouped transaction), so it must not
	// change caller state; results are published after Write returns nil.
	Write(ctx context.Context, fn func(Querier) error) error
	// Reader runs reads outside any transaction.
	Reader() Querier
	// LeaseNow is the instant every lease decision of a write is made at,
	// read inside the write after its row lock: the caller's time (or the
	// wall clock when zero) where the store serves one machine, the
	// database's clock where replicas on many machines share it.
	LeaseNow(ctx context.Context, tx Querier, caller time.Time) (time.Time, error)
	// Syntax is the dialect's SQL.
	Syntax() Syntax
}

// Committer is a write transaction that can send its last statements
// with its COMMIT, in one round trip. Once BatchCommit was called the
// transaction is over: committed when it returned nil, aborted otherwise,
// and any further statement fails.
type Committer interface {
	BatchCommit(ctx context.Context, stmts []Stmt) error
}

// batchCommit runs stmts as tx's last statements: with its COMMIT where tx
// is a Committer, else as a Batch, leaving the commit to Dialect.Write.
func batchCommit(ctx context.Context, tx Querier, stmts []Stmt) error {
	if c, ok := tx.(Committer); ok {
		return c.BatchCommit(ctx, stmts)
	}
	if len(stmts) == 0 {
		return nil
	}
	return tx.Batch(ctx, stmts)
}

// LockedReader is a Dialect that runs many locking reads and a read of
// the lease clock after them in one round trip: the clock is still read
// after each row's lock was granted (and before the commit releases it),
// so a lease decision is made at an instant the lock held, as with
// LeaseNow.
type LockedReader interface {
	ReadLocked(ctx context.Context, tx Querier, reads []LockedRead) error
}

// LockedRead is one row read under its lock: Dest receives the row, Found
// says whether there was one, Now is the lease clock after the lock (see
// Dialect.LeaseNow for Caller). Without Dest it is a statement run for its
// effect (Found when it succeeded), sent with the reads it precedes.
type LockedRead struct {
	SQL    string
	Args   []any
	Dest   []any
	Caller time.Time
	// NoClock: no lease decision follows this read (the chain head's), so
	// the clock is not read after it and Now stays zero.
	NoClock bool
	Found   bool
	Now     time.Time
	// Each makes this a read of many rows (one per write of a group, see
	// Syntax.HeadRow's group reads): it is called with each row in turn,
	// Dest is unused, and Nows[i] receives the lease clock for the write
	// whose caller's time is Callers[i] (as Now does for Caller).
	Each    func(Row) error
	Callers []time.Time
	Nows    []time.Time
}

// Syntax is where the dialects' SQL differs.
type Syntax struct {
	// Name prefixes every error of the store ("sqlite", "postgres").
	Name string
	// MigrationsTable is the DDL of pollwarden_migrations (version, name,
	// applied_at), IF NOT EXISTS.
	MigrationsTable string
	// ForUpdate follows the SELECT of a row a write will change:
	// " FOR UPDATE" where rows are locked one at a time, "" where the
	// transaction already holds the database's only write lock.
	ForUpdate string
	// SkipLocked follows the subquery that picks outbox messages to claim:
	// " FOR UPDATE SKIP LOCKED" lets claimers pass each other's rows.
	SkipLocked string
	// HeadRow: the audit chain's head is kept in the one-row audit_head
	// table, locked before an append and moved after it (several writers
	// at once); otherwise it is read from events, under the write lock.
	HeadRow bool
	// GroupWrites: the store commits the claims and saves of one process
	// that arrive together in one transaction (see grouper): in a few
	// round trips where rows are locked one at a time (runGroup), in a few
	// multi-row statements where the transaction holds the database's one
	// write lock (runGroupLocal).
	GroupWrites bool
	// Linger is how long after a group ended the next may wait for the
	// writers of the ended one (see gather); zero for none.
	Linger time.Duration
	// EventArrays: a group's events are one INSERT of unnested arrays
	// (PostgreSQL), not one multi-row INSERT per write: the statement
	// runs while the chain head is held, and each statement costs the
	// server more than the rows it inserts.
	EventArrays bool
	// ArrayUpdates: a group's records are one UPDATE … FROM unnest(arrays)
	// per form (PostgreSQL), not one UPDATE per write (see mergeArrays).
	ArrayUpdates bool
	// CreatedOrder is the expression that numbers a new operation, "" when
	// the column numbers itself.
	CreatedOrder string
	// LastState is the SQL expression of a record's last provider state
	// (a field of the JSON record, not a column), for a text search.
	LastState string
	// Hints names the index a query must use (SQLite's INDEXED BY, for a
	// planner without statistics); nil for none.
	Hints bool
}

// hint is " INDEXED BY index" when the dialect takes hints.
func (x Syntax) hint(index string) string {
	if !x.Hints {
		return ""
	}
	return " INDEXED BY " + index
}
