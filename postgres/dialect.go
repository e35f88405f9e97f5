package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pollwarden/pollwarden/internal/sqlstore"
)

// dialect is PostgreSQL's side of the shared store (see the package
// comment for the locking and the clock).
type dialect struct{ s *Store }

// LeaseNow is the database's clock, read after the caller's row lock was
// granted: one clock for every replica whatever their own clocks say. The
// caller's t is ignored (a replica whose clock runs ahead must not see a
// live lease as expired), except in a store opened for the conformance
// suite, which moves time by hand (see Options.callerClock).
func (d dialect) LeaseNow(ctx context.Context, tx sqlstore.Querier, t time.Time) (time.Time, error) {
	if d.s.callerClock && !t.IsZero() {
		return t, nil
	}
	var now time.Time
	if err := tx.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	return now, nil
}

// Write runs fn in one READ COMMITTED transaction and commits it. Row locks
// taken by fn (FOR UPDATE) make its checks hold until the commit. The
// transaction begins with fn's first statement and may commit with its
// last batch (see pipeTx).
func (d dialect) Write(ctx context.Context, fn func(sqlstore.Querier) error) error {
	pc, err := d.s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer pc.Release()
	t := &pipeTx{c: pc.Conn()}
	return t.finish(ctx, fn(querier{d.s.binds, t}))
}

// Reader runs reads on the pool, each in its own implicit transaction.
func (d dialect) Reader() sqlstore.Querier { return querier{d.s.binds, d.s.pool} }

func (dialect) Syntax() sqlstore.Syntax { return sqlstore.PostgreSQL() }

// ReadLocked sends every locking read and then one read of the clock, in
// one round trip: the clock statement runs after every read before it has
// its row lock, so each lease decision is still made at an instant after
// its lock was granted, and before the commit releases it (see LeaseNow),
// without a round trip, or a statement, of its own per read.
func (d dialect) ReadLocked(ctx context.Context, tx sqlstore.Querier, reads []sqlstore.LockedRead) error {
	q := tx.(querier)
	var b pgx.Batch
	clock := false
	for _, r := range reads {
		b.Queue(q.b.of(r.SQL), r.Args...)
		clock = clock || !r.NoClock
	}
	if clock {
		b.Queue("SELECT clock_timestamp()")
	}
	br := q.c.SendBatch(ctx, &b)
	var err error
	for i := range reads {
		r := &reads[i]
		if r.Each != nil {
			serr := eachRow(br, r.Each)
			r.Found = serr == nil
			if serr != nil && err == nil {
				err = serr
			}
			continue
		}
		if r.Dest == nil {
			_, serr := br.Exec()
			r.Found = serr == nil
			if serr != nil && err == nil {
				err = serr
			}
			continue
		}
		serr := br.QueryRow().Scan(r.Dest...)
		r.Found = serr == nil
		if serr != nil && !errors.Is(serr, pgx.ErrNoRows) && err == nil {
			err = serr
		}
	}
	var now time.Time
	if clock {
		if cerr := br.QueryRow().Scan(&now); cerr != nil && err == nil {
			err = fmt.Errorf("read the database clock: %w", cerr)
		}
	}
	for i := range reads {
		r := &reads[i]
		switch {
		case r.NoClock:
		case d.s.callerClock && !r.Caller.IsZero():
			r.Now = r.Caller
		default:
			r.Now = now
		}
		for n, c := range r.Callers {
			r.Nows[n] = now
			if d.s.callerClock && !c.IsZero() {
				r.Nows[n] = c
			}
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// eachRow reads the rows of a batch's next statement into each.
func eachRow(br pgx.BatchResults, each func(sqlstore.Row) error) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
