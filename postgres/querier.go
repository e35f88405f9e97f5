package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pollwarden/pollwarden/internal/sqlstore"
)

// conn is what a transaction and the pool both offer.
type conn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

var (
	_ conn = pgx.Tx(nil)
	_ conn = (*pgxpool.Pool)(nil)
)

// binds caches the "$n" form of each "?" statement: the store's
// statements are a fixed, small set.
type binds struct {
	mu sync.Mutex
	m  map[string]string
}

// of rewrites the "?" placeholders of query as "$1", "$2"... (the store's
// statements hold no "?" in literals).
func (b *binds) of(query string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q, ok := b.m[query]; ok {
		return q
	}
	var out strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			out.WriteString("$" + strconv.Itoa(n))
			continue
		}
		out.WriteRune(r)
	}
	if b.m == nil {
		b.m = map[string]string{}
	}
	b.m[query] = out.String()
	return out.String()
}

type querier struct {
	b *binds
	c conn
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.c.Exec(ctx, q.b.of(query), args...)
	return tag.RowsAffected(), err
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return row{q.c.QueryRow(ctx, q.b.of(query), args...)}
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return q.c.Query(ctx, q.b.of(query), args...)
}

// Batch sends the statements in one round trip.
func (q querier) Batch(ctx context.Context, stmts []sqlstore.Stmt) error {
	var b pgx.Batch
	for _, s := range stmts {
		b.Queue(q.b.of(s.SQL), s.Args...)
	}
	return q.c.SendBatch(ctx, &b).Close()
}

// BatchCommit sends the statements and the transaction's COMMIT in one
// round trip (see sqlstore.Committer); outside a write transaction it is
// Batch.
func (q querier) BatchCommit(ctx context.Context, stmts []sqlstore.Stmt) error {
	t, ok := q.c.(*pipeTx)
	if !ok {
		return q.Batch(ctx, stmts)
	}
	return t.commitWith(ctx, q.b, stmts)
}

type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlstore.ErrNoRows
	}
	return err
}
