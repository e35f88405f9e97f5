package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pollwarden/pollwarden/internal/sqlstore"
)

// errCommitted is what a statement sent after a transaction committed with
// its last batch gets: it would otherwise run outside the transaction.
var errCommitted = errors.New("the write transaction already committed with its last batch")

// pipeTx is one write transaction on one connection whose BEGIN travels
// with its first batch and whose COMMIT may travel with its last
// (querier.BatchCommit): a grouped write is then two round trips, its
// locking reads and its writes, instead of six. On the loopback server
// every round trip costs as much as a batch of twenty updates.
type pipeTx struct {
	c     *pgx.Conn
	begun bool // BEGIN was sent
	done  bool // COMMIT was sent
}

var _ conn = (*pipeTx)(nil)

// begin sends BEGIN alone, for a first statement that cannot carry it.
func (t *pipeTx) begin(ctx context.Context) error {
	if t.done {
		return errCommitted
	}
	if t.begun {
		return nil
	}
	t.begun = true
	_, err := t.c.Exec(ctx, "BEGIN")
	return err
}

func (t *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if !t.begun && !t.done && !simple(args) {
		var b pgx.Batch
		b.Queue(sql, args...)
		br := t.SendBatch(ctx, &b)
		tag, err := br.Exec()
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return tag, err
	}
	if err := t.begin(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.c.Exec(ctx, sql, args...)
}

// simple reports whether args ask for another execution mode (a script's
// simple protocol), which a batch would not honour.
func simple(args []any) bool {
	if len(args) == 0 {
		return false
	}
	_, ok := args[0].(pgx.QueryExecMode)
	return ok
}

func (t *pipeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if !t.begun && !t.done {
		var b pgx.Batch
		b.Queue(sql, args...)
		return batchRow{t.SendBatch(ctx, &b)}
	}
	if err := t.begin(ctx); err != nil {
		return errRow{err}
	}
	return t.c.QueryRow(ctx, sql, args...)
}

func (t *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return t.c.Query(ctx, sql, args...)
}

// SendBatch sends b, preceded by BEGIN when the transaction has not begun
// (its result is read here, so the caller reads b's own).
func (t *pipeTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.done {
		return pgx.FailedBatchResults(b, errCommitted)
	}
	if t.begun {
		return t.c.SendBatch(ctx, b)
	}
	t.begun = true
	withBegin := &pgx.Batch{QueuedQueries: append([]*pgx.QueuedQuery{{SQL: "BEGIN"}}, b.QueuedQueries...)}
	br := t.c.SendBatch(ctx, withBegin)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return pgx.FailedBatchResults(b, fmt.Errorf("begin: %w", err))
	}
	return br
}

// commitWith sends stmts and COMMIT in one batch. The transaction is over
// whatever the outcome: a failed statement leaves it aborted (Write rolls
// it back), a failed COMMIT ends it.
func (t *pipeTx) commitWith(ctx context.Context, bd *binds, stmts []sqlstore.Stmt) error {
	var b pgx.Batch
	for _, s := range stmts {
		b.Queue(bd.of(s.SQL), s.Args...)
	}
	b.Queue("COMMIT")
	br := t.SendBatch(ctx, &b)
	t.done = true
	var err error
	for range stmts {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if err == nil {
		var tag pgconn.CommandTag
		if tag, err = br.Exec(); err == nil && tag.String() != "COMMIT" {
			err = pgx.ErrTxCommitRollback
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// finish ends the transaction after its function returned err: a commit
// when it succeeded and did not commit with its last batch, else a
// rollback of whatever is still open (a connection left in a transaction
// would be discarded by the pool instead of reused).
func (t *pipeTx) finish(ctx context.Context, err error) error {
	if err == nil && t.begun && !t.done {
		t.done = true
		var tag pgconn.CommandTag
		if tag, err = t.c.Exec(ctx, "COMMIT"); err == nil && tag.String() != "COMMIT" {
			err = pgx.ErrTxCommitRollback
		}
	}
	if !t.c.IsClosed() && t.c.PgConn().TxStatus() != 'I' {
		_, _ = t.c.Exec(ctx, "ROLLBACK")
	}
	return err
}

// batchRow is the one row of a batch of one query, which it closes.
type batchRow struct{ br pgx.BatchResults }

func (r batchRow) Scan(dest ...any) error {
	err := r.br.QueryRow().Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
