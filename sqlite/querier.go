package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/pollwarden/pollwarden/internal/sqlstore"
)

// stmtCache keeps every statement the store runs prepared once per Store
// (database/sql then keeps a prepared copy per pooled connection): parsing
// a statement costs more than running it. The store's statements are a
// fixed, small set.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// get returns query prepared, or nil when it cannot be (it then runs
// unprepared and reports its own error).
func (c *stmtCache) get(ctx context.Context, query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st
	}
	st, err := c.db.PrepareContext(context.WithoutCancel(ctx), query)
	if err != nil {
		return nil
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// querier runs the shared store's statements, prepared, in tx or, when
// tx is nil, on the pool.
type querier struct {
	c  *stmtCache
	tx *sql.Tx
}

func (q querier) stmt(ctx context.Context, query string) *sql.Stmt {
	st := q.c.get(ctx, query)
	if st != nil && q.tx != nil {
		st = q.tx.StmtContext(ctx, st)
	}
	return st
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var res sql.Result
	var err error
	if st := q.stmt(ctx, query); st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else if q.tx != nil {
		res, err = q.tx.ExecContext(ctx, query, args...)
	} else {
		res, err = q.c.db.ExecContext(ctx, query, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	var r *sql.Row
	if st := q.stmt(ctx, query); st != nil {
		r = st.QueryRowContext(ctx, args...)
	} else if q.tx != nil {
		r = q.tx.QueryRowContext(ctx, query, args...)
	} else {
		r = q.c.db.QueryRowContext(ctx, query, args...)
	}
	return row{r}
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	var r *sql.Rows
	var err error
	if st := q.stmt(ctx, query); st != nil {
		r, err = st.QueryContext(ctx, args...)
	} else if q.tx != nil {
		r, err = q.tx.QueryContext(ctx, query, args...)
	} else {
		r, err = q.c.db.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

// Batch runs the statements one after the other (in-process SQLite has no
// round trips to save), binding each distinct statement to the
// transaction once: a write's events are one INSERT run many times.
func (q querier) Batch(ctx context.Context, stmts []sqlstore.Stmt) error {
	var last string
	var st *sql.Stmt
	for _, s := range stmts {
		if st == nil || s.SQL != last {
			last, st = s.SQL, q.stmt(ctx, s.SQL)
		}
		if st == nil {
			if _, err := q.Exec(ctx, s.SQL, s.Args...); err != nil {
				return err
			}
			continue
		}
		if _, err := st.ExecContext(ctx, s.Args...); err != nil {
			return err
		}
	}
	return nil
}

type row struct{ r *sql.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return sqlstore.ErrNoRows
	}
	return err
}

type rows struct{ *sql.Rows }

func (r rows) Close() { r.Rows.Close() }
