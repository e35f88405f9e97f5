package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pollwarden/pollwarden"
)

// maxGroup bounds how many writes one grouped transaction commits, so a
// group holds its row locks, and the chain head, for a bounded time.
const maxGroup = 64

// A grouped write is one operation's claim or save: fn locks and reads the
// operation's row, checks, and only then changes it, so a fn that fails a
// check has changed nothing and its group can still commit the others'
// writes. Its events are not appended by fn but queued (see queueAppend)
// and appended for the whole group at the end, under one lock of the
// chain's head.
type groupedWrite struct {
	ctx  context.Context
	opID string
	fn   func(Querier) error
	done chan error // buffered: the committer never waits for the caller
}

// grouper commits the grouped writes of one Store that arrive while
// another group is committing in one transaction (group commit): one
// commit, one lock of the chain head and one batch of event inserts for
// many steps, instead of one each. It serves the stores whose dialect
// locks rows one at a time (Syntax.GroupWrites), where the chain head is a
// lock every writer of every process queues on, so the time it is held is
// the fleet's bound; SQLite groups its writes in its driver.
type grouper struct {
	// groups and grouped count the groups committed with more than one
	// write and the writes in them (see Store.WriteGroups).
	groups, grouped atomic.Int64

	mu      sync.Mutex
	pending []*groupedWrite
	slot    chan struct{} // holds one token while a group runs
}

func newGrouper() *grouper { return &grouper{slot: make(chan struct{}, 1)} }

// groupTx is the Querier a grouped write's fn sees: the group's
// transaction, and the event appends queued by the group's writes so far.
type groupTx struct {
	Querier
	appends *[]queuedAppend
}

// queuedAppend is one write's events, to be numbered after its
// operation's last event (Seq, read under the row lock) and chained when
// the group appends.
type queuedAppend struct {
	opID string
	seq  int64
	evs  []pollwarden.Event
}

// writeGrouped runs fn as a grouped write of operation opID (see
// groupedWrite) and returns once the transaction holding it committed (or
// with fn's own error). A caller that arrives while a group runs waits for
// it; the first waiter then runs every write that queued meanwhile.
func (s *Store) writeGrouped(ctx context.Context, opID string, fn func(Querier) error) error {
	if s.g == nil {
		return s.d.Write(ctx, fn)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &groupedWrite{ctx: ctx, opID: opID, fn: fn, done: make(chan error, 1)}
	g := s.g
	g.mu.Lock()
	g.pending = append(g.pending, w)
	g.mu.Unlock()
	select {
	case err := <-w.done:
		return err
	case g.slot <- struct{}{}:
	}
	defer func() { <-g.slot }()
	for {
		select {
		case err := <-w.done:
			return err
		default:
		}
		g.mu.Lock()
		batch := takeGroup(&g.pending)
		g.mu.Unlock()
		s.commitGroup(batch)
	}
}

// takeGroup removes from *pending the writes of the next group: at most
// maxGroup, and one write per operation (a second write of the same
// operation waits for the next group, so each sees the other's commit).
// The group is sorted by operation id: every group locks rows in the same
// order, so groups of different processes never deadlock.
func takeGroup(pending *[]*groupedWrite) []*groupedWrite {
	var batch, rest []*groupedWrite
	seen := map[string]bool{}
	for _, w := range *pending {
		if len(batch) == maxGroup || seen[w.opID] {
			rest = append(rest, w)
			continue
		}
		seen[w.opID] = true
		batch = append(batch, w)
	}
	*pending = append((*pending)[:0], rest...)
	slices.SortStableFunc(batch, func(a, b *groupedWrite) int { return cmp.Compare(a.opID, b.opID) })
	return batch
}

// commitGroup runs batch in one transaction and tells each writer its
// result. When the transaction as a whole fails (a statement failed and
// aborted it, or a lock wait timed out), each write runs again alone, so
// that no write fails for another's sake. The group's transaction follows
// no one caller's context: one caller giving up must not roll back the
// others' writes.
func (s *Store) commitGroup(batch []*groupedWrite) {
	if len(batch) > 1 {
		errs := make([]error, len(batch))
		err := s.d.Write(context.Background(), func(tx Querier) error {
			var appends []queuedAppend
			gtx := groupTx{tx, &appends}
			for i, w := range batch {
				if errs[i] = w.ctx.Err(); errs[i] != nil {
					continue
				}
				mark := len(appends)
				if errs[i] = w.fn(gtx); errs[i] != nil {
					appends = appends[:mark]
					if !isCheck(errs[i]) {
						return errs[i] // the transaction may be broken: run each alone
					}
				}
			}
			return s.appendQueued(context.Background(), tx, appends)
		})
		if err == nil {
			s.g.groups.Add(1)
			s.g.grouped.Add(int64(len(batch)))
			for i, w := range batch {
				w.done <- errs[i]
			}
			return
		}
	}
	for _, w := range batch {
		w.done <- s.d.Write(w.ctx, func(tx Querier) error { return s.runAlone(w.ctx, tx, w.fn) })
	}
}

// isCheck reports whether a grouped write's error is one of the store's
// refusals, decided in Go before the write changed anything (so its group
// may still commit), rather than a failed statement.
func isCheck(err error) bool {
	for _, e := range []error{pollwarden.ErrLeaseHeld, pollwarden.ErrLeaseLost, pollwarden.ErrConflict,
		pollwarden.ErrNotFound, pollwarden.ErrInvalid} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// runAlone runs one grouped write's fn in its own transaction, then
// appends its events.
func (s *Store) runAlone(ctx context.Context, tx Querier, fn func(Querier) error) error {
	var appends []queuedAppend
	if err := fn(groupTx{tx, &appends}); err != nil {
		return err
	}
	return s.appendQueued(ctx, tx, appends)
}

// queueAppend is appendEvents for a grouped write: the events are
// appended with the group's (see appendQueued). It reports false when tx
// is not a grouped write's.
func queueAppend(tx Querier, opID string, cs Chain, evs []pollwarden.Event) bool {
	gtx, ok := tx.(groupTx)
	if !ok {
		return false
	}
	if len(evs) > 0 {
		*gtx.appends = append(*gtx.appends, queuedAppend{opID: opID, seq: cs.Seq, evs: evs})
	}
	return true
}

// appendQueued appends a group's queued events in one batch, after the
// chain's head, locked once for the group. An operation has at most one
// write per group (takeGroup), so each one's Seq, read under its row
// lock, is still its last.
func (s *Store) appendQueued(ctx context.Context, tx Querier, appends []queuedAppend) error {
	if len(appends) == 0 {
		return nil
	}
	var cs Chain
	if err := s.lockHead(ctx, tx, &cs); err != nil {
		return err
	}
	if err := s.checkSealMode(ctx, tx); err != nil {
		return err
	}
	var stmts []Stmt
	for _, a := range appends {
		cs.Seq = a.seq
		for k := range a.evs {
			e := &a.evs[k]
			cs.link(e)
			stmts = append(stmts, eventStmt(a.opID, e))
		}
	}
	stmts = append(stmts, s.headStmt(cs))
	if err := tx.Batch(ctx, stmts); err != nil {
		return errAppend(err)
	}
	return nil
}

// unwrap is the driver's own Querier under a grouped write's.
func unwrap(tx Querier) Querier {
	if gtx, ok := tx.(groupTx); ok {
		return gtx.Querier
	}
	return tx
}

// WriteGroups reports how many groups of more than one write this Store
// committed and how many writes they held (zero where the driver groups
// writes itself): whether writes arrive together enough to share commits.
func (s *Store) WriteGroups() (groups, writes int64) {
	if s.g == nil {
		return 0, 0
	}
	return s.g.groups.Load(), s.g.grouped.Load()
}
