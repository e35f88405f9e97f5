package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	msqlite "modernc.org/sqlite"
)

// maxBusyRetries bounds how often a whole transaction is retried after
// SQLITE_BUSY. With BEGIN IMMEDIATE and a 10 s busy timeout BUSY is rare (a
// lock held that long, or a WAL recovery), so a few retries suffice; more
// would only hide a stuck process.
const maxBusyRetries = 5

// write runs fn in one BEGIN IMMEDIATE transaction (the DSN's _txlock) and
// commits it. fn may run more than once, so it must not change caller state;
// callers publish results only after write returns nil.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.retryBusy(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

// retryBusy runs fn again, after a short jittered pause, while it fails with
// SQLITE_BUSY or SQLITE_LOCKED.
func (s *Store) retryBusy(ctx context.Context, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if !isBusy(err) || attempt > maxBusyRetries {
			return err
		}
		pause := time.Duration(attempt) * (10*time.Millisecond + rand.N(20*time.Millisecond))
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (after %v)", ctx.Err(), err)
		case <-time.After(pause):
		}
	}
}

// SQLite primary result codes; the driver reports extended codes, whose low
// byte is the primary one.
const (
	sqliteBusy   = 5
	sqliteLocked = 6
)

func isBusy(err error) bool {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code() & 0xff
	return c == sqliteBusy || c == sqliteLocked
}

// nowOr returns t, or the wall clock when the caller left it zero: a zero
// "now" would make every lease look unexpired forever.
func nowOr(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}
