package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/pollwarden/pollwarden/internal/sqlstore"
)

// dialect is SQLite's side of the shared store: writes take the file's
// one write lock (BEGIN IMMEDIATE, grouped: see write), so rows need no
// locks of their own and the chain's head is read from the events table;
// leases are judged on the caller's clock, since the store serves one
// machine and a controller's fake clock must drive its leases too.
type dialect struct{ s *Store }

func (d dialect) Syntax() sqlstore.Syntax {
	x := sqlstore.SQLite()
	if d.s.noLinger {
		x.Linger = 0
	}
	return x
}

func (d dialect) Write(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return d.s.write(ctx, func(tx *sql.Tx) error { return fn(querier{d.s.stmts, tx}) })
}

func (d dialect) Reader() sqlstore.Querier { return querier{d.s.stmts, nil} }

// LeaseNow is the caller's time, or the wall clock when the caller left it
// zero: a zero "now" would make every lease look unexpired forever.
func (d dialect) LeaseNow(_ context.Context, _ sqlstore.Querier, t time.Time) (time.Time, error) {
	if t.IsZero() {
		return time.Now(), nil
	}
	return t, nil
}
