package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"time"
)

// maxBusyRetries bounds how often a whole transaction is retried after
// SQLITE_BUSY. With BEGIN IMMEDIATE and a 10 s busy timeout BUSY is rare (a
// lock held that long, or a WAL recovery), so a few retries suffice; more
// would only hide a stuck process.
const maxBusyRetries = 5

// maxGroup bounds how many writes one transaction commits together, so a
// group holds the file's write lock for a bounded time.
const maxGroup = 64

// pendingWrite is one caller's write, waiting to be committed.
type pendingWrite struct {
	ctx  context.Context
	fn   func(*sql.Tx) error
	done chan error // buffered: the committer never waits for the caller
}

// write runs fn in a BEGIN IMMEDIATE transaction (the DSN's _txlock) and
// commits it. Writes of this process that arrive while another group is
// committing are committed together (group commit): the next goroutine to
// take the writer slot runs every waiting write in one transaction, each
// inside its own SAVEPOINT so a write that fails is undone alone, and
// commits them at once — one commit, and with synchronous=FULL one fsync,
// for the group instead of one each. A caller returns, with its own
// write's result, once the commit that holds it is done; nothing is
// reported before it is durable. Other processes are still excluded by
// BEGIN IMMEDIATE.
//
// fn may run more than once (after SQLITE_BUSY, or alone again when its
// group could not commit), so it must not change caller state; callers
// publish results only after write returns nil.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &pendingWrite{ctx: ctx, fn: fn, done: make(chan error, 1)}
	s.gmu.Lock()
	s.group = append(s.group, w)
	s.gmu.Unlock()
	select {
	case err := <-w.done:
		return err // committed by the goroutine that held the slot
	case s.wslot <- struct{}{}:
	}
	defer func() { <-s.wslot }()
	for {
		select {
		case err := <-w.done:
			return err
		default:
		}
		s.gmu.Lock()
		n := min(len(s.group), maxGroup)
		batch := make([]*pendingWrite, n)
		copy(batch, s.group)
		s.group = append(s.group[:0], s.group[n:]...)
		s.gmu.Unlock()
		s.commitGroup(batch)
	}
}

// commitGroup commits batch in one transaction and tells each writer its
// result. If the group as a whole cannot commit (another process holds the
// lock past the busy timeout, or one write broke the transaction), each
// write is run again in a transaction of its own, so that no write fails
// for another's sake.
func (s *Store) commitGroup(batch []*pendingWrite) {
	if len(batch) > 1 {
		if errs, err := s.tryGroup(batch); err == nil {
			for i, w := range batch {
				w.done <- errs[i]
			}
			return
		}
	}
	for _, w := range batch {
		w.done <- s.retryBusy(w.ctx, func() error { return s.runTx(w.ctx, w.fn) })
	}
}

// tryGroup runs the writes of batch in one transaction, each in a
// savepoint, and commits. It returns each write's own error, or an error
// for the group when nothing was committed. The transaction itself does
// not follow any one caller's context: one caller giving up must not
// roll back the others' writes.
func (s *Store) tryGroup(batch []*pendingWrite) ([]error, error) {
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(batch))
	for i, w := range batch {
		if errs[i] = w.ctx.Err(); errs[i] != nil {
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT w"); err != nil {
			tx.Rollback()
			return nil, err
		}
		if errs[i] = w.fn(tx); errs[i] != nil {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO w"); err != nil {
				tx.Rollback()
				return nil, err
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE w"); err != nil {
			tx.Rollback()
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return errs, nil
}

// runTx runs fn alone in one transaction and commits it.
func (s *Store) runTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
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
	c, ok := errorCode(err)
	return ok && (c&0xff == sqliteBusy || c&0xff == sqliteLocked)
}

// nowOr returns t, or the wall clock when the caller left it zero: a zero
// "now" would make every lease look unexpired forever.
func nowOr(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}
