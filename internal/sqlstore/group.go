package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pollwarden/pollwarden"
)

// maxGroup bounds how many writes one grouped transaction commits, so a
// group holds its row locks, and the chain head, for a bounded time.
const maxGroup = 64

// rowWrite is one operation's claim or save in three steps: read the
// operation's row under its lock (query into dest), decide from what was
// read, and run the one statement decide returns, then append its events
// after chain. decide changes nothing itself (it may read), so a write
// refused by its checks leaves its group free to commit the others'.
type rowWrite struct {
	opID  string
	query string
	// group reads the same columns as query for many rows at once, where
	// groups run under the database's one write lock (see runGroupLocal).
	group  string
	dest   []any
	caller time.Time // the caller's Now, for Dialect.LeaseNow
	chain  *Chain    // filled by the read (some of dest point into it)
	// key is the quota key whose row the write reads and may change
	// (ClaimParams.Quota, SaveParams.Quota), "" for none: the runners
	// lock it after the operations' rows, and decide finds it in keys.
	key string
	// decide runs once the row was read (found false when there was
	// none) with the lease clock's now; it returns the write's statement
	// and events, or nil to write nothing. It may change the rows in keys
	// (only once its checks passed: a refused write changes nothing).
	decide func(ctx context.Context, tx Querier, found bool, now time.Time, keys *keyTx) (*Stmt, []pollwarden.Event, error)
}

// groupedWrite is a rowWrite waiting for its group.
type groupedWrite struct {
	ctx  context.Context
	w    rowWrite
	done chan error // buffered: the committer never waits for the caller
}

// inFlight is how many groups of one Store may be committing at once.
// With one, a group's reads and records wait for the previous group's
// commit (and its WAL flush) although they touch other rows; with two, one
// group reads, decides and writes its records while the other appends its
// events and commits, under the chain head's lock (see runGroup).
const inFlight = 2

// grouper commits the claims and saves of one Store that arrive while
// other groups are committing in one transaction (group commit): one
// round trip reads every row, one runs every write, one commit and one
// lock of the chain head serve many steps instead of one each. It serves
// the stores whose dialect locks rows one at a time (Syntax.GroupWrites),
// where the chain head is a lock every writer of every process queues on,
// so the time it is held bounds the fleet. Under SQLite's one write lock
// a group is a few multi-row statements instead (runGroupLocal), and the
// driver still groups the store's other writes.
type grouper struct {
	// groups and grouped count the groups committed with more than one
	// write and the writes in them (see Store.WriteGroups).
	groups, grouped atomic.Int64
	// broken counts the groups whose transaction failed as a whole, so
	// that their writes ran again one by one (see Store.BrokenGroups).
	broken atomic.Int64

	mu      sync.Mutex
	pending []*groupedWrite
	// busy holds the operations of the groups committing: a write of one
	// of them waits for that group's commit (see takeGroup).
	busy map[string]bool
	// ended is closed, and replaced, when a group ends: a writer with
	// nothing it could take waits for it.
	ended chan struct{}
	slot  chan struct{} // holds a token while a group runs
	// lastHead is the head's pos after this process's last append (-1
	// before the first);
	// shared counts down the groups still run one at a time (solo holds
	// their token) since another writer was seen (see headSeen).
	lastHead int64
	shared   atomic.Int64
	solo     chan struct{}

	// linger, where not zero, lets a group wait for the writers of the
	// group before it (see gather); expect is how many writes were in
	// that group or pending when it ended, lastEnd when it ended; arrived
	// is closed when a write is queued while a group waits, and lingered
	// counts the groups that waited.
	linger   time.Duration
	expect   int
	lastEnd  time.Time
	arrived  chan struct{}
	lingered atomic.Int64
}

// newGrouper lets slots groups commit at once: inFlight where rows are
// locked one at a time; one where a transaction holds the database's
// only write lock (SQLite), since a second group could only queue behind
// the first's commit, taking there the writes that would otherwise make
// the next group larger (measured: 14 writes a group with two, more
// commits and more WAL frames per step).
func newGrouper(slots int, linger time.Duration) *grouper {
	return &grouper{busy: map[string]bool{}, ended: make(chan struct{}), slot: make(chan struct{}, slots),
		lastHead: -1, solo: make(chan struct{}, 1), linger: linger}
}

// localLinger is how long after a group ended the next may wait for the
// writers of the ended one, under one write lock (SQLite). Writers come
// back with their next write (a step's save after its claim) just after
// the next group was taken, so the writers split into two cohorts that
// commit in turn, each paying a commit, its fsync and its WAL header.
// Waiting merges them (measured: 28 writes a group instead of 23.5 in
// BenchmarkStep; 300 µs gave smaller groups, as the timer fired before
// the cohort was back on a loaded machine). The wait is before BEGIN, so
// no lock is held while it lasts, and it is shorter than a commit with
// its fsync.
const localLinger = time.Millisecond

// queue adds ws to the writes pending, under one lock so that the next
// group can take them all, and wakes a group waiting for more (see
// gather).
func (g *grouper) queue(ws ...*groupedWrite) {
	g.mu.Lock()
	g.pending = append(g.pending, ws...)
	if g.arrived != nil {
		close(g.arrived)
		g.arrived = nil
	}
	g.mu.Unlock()
}

// gather waits, before a group is taken, while fewer writes are pending
// than were in flight when the group before ended (its own and those
// pending then), and less than linger passed since it ended: its writers
// are then likely to come back at once. A write that comes
// alone, long after the last group (a CLI's, a single create), or one
// after a group of one (writes one after the other), never waits.
func (g *grouper) gather() {
	if g.linger <= 0 {
		return
	}
	var timer *time.Timer
	for {
		g.mu.Lock()
		n := len(g.pending)
		wait := time.Until(g.lastEnd.Add(g.linger))
		if n == 0 || n >= min(g.expect, maxGroup) || wait <= 0 {
			g.mu.Unlock()
			break
		}
		if g.arrived == nil {
			g.arrived = make(chan struct{})
		}
		arrived := g.arrived
		g.mu.Unlock()
		if timer == nil {
			g.lingered.Add(1)
			timer = time.NewTimer(wait)
		}
		select {
		case <-arrived:
		case <-timer.C:
			return
		}
	}
	if timer != nil {
		timer.Stop()
	}
}

// writeGrouped runs rw in a write transaction and returns once the
// transaction holding it committed (or with its own refusal). Where the
// store groups writes, a caller that arrives while the groups in flight
// run waits for a slot; it then runs every write that queued meanwhile,
// and goes on until its own write is done.
func (s *Store) writeGrouped(ctx context.Context, rw rowWrite) error {
	if s.g == nil {
		return s.d.Write(ctx, func(tx Querier) error { return s.runAlone(ctx, tx, rw) })
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &groupedWrite{ctx: ctx, w: rw, done: make(chan error, 1)}
	s.g.queue(w)
	return s.awaitGrouped(w)
}

// drain commits groups until w is done (done true, with its result) or
// nothing is left to take; then it returns the channel that the next end
// of a group closes.
func (s *Store) drain(w *groupedWrite) (ended chan struct{}, done bool, err error) {
	g := s.g
	for {
		select {
		case err := <-w.done:
			return nil, true, err
		default:
		}
		solo := g.shared.Load() > 0
		if solo {
			g.solo <- struct{}{}
		}
		g.gather()
		g.mu.Lock()
		batch := takeGroup(&g.pending, g.busy)
		ended = g.ended
		g.mu.Unlock()
		if len(batch) > 0 {
			s.commitGroup(batch)
		}
		if solo {
			<-g.solo
		}
		if len(batch) == 0 {
			return ended, false, nil
		}
	}
}

// sharedGroups is how many of its next groups a process runs one at a
// time once it saw another writer move the chain head between two of its
// own appends: another replica's groups then queue on the head too, and a
// second group of this process in flight only adds a waiter there and
// halves this process's groups (measured: 3 replicas in one process,
// 1,127–1,382 req/s with two in flight, 1,460–1,584 with one).
const sharedGroups = 8

// headSeen compares the head a group locked with where this process's
// last append left it: another writer moved it in between when they
// differ. Then it records where this group's append leaves it.
func (g *grouper) headSeen(locked, left int64) {
	if g == nil {
		return
	}
	g.mu.Lock()
	if g.lastHead >= 0 && g.lastHead != locked {
		g.shared.Store(sharedGroups)
	} else if g.shared.Load() > 0 {
		g.shared.Add(-1)
	}
	g.lastHead = left
	g.mu.Unlock()
}

// takeGroup removes from *pending the writes of the next group: at most
// maxGroup, one write per operation, and none of an operation in busy (a
// second write of an operation waits for the group holding the first, so
// it reads the first's commit); it adds the group's operations to busy.
// The group is sorted by operation id: every group locks rows in the same
// order, so groups of this and other processes never deadlock.
func takeGroup(pending *[]*groupedWrite, busy map[string]bool) []*groupedWrite {
	var batch, rest []*groupedWrite
	for _, w := range *pending {
		if len(batch) == maxGroup || busy[w.w.opID] {
			rest = append(rest, w)
			continue
		}
		busy[w.w.opID] = true
		batch = append(batch, w)
	}
	*pending = append((*pending)[:0], rest...)
	slices.SortStableFunc(batch, func(a, b *groupedWrite) int { return cmp.Compare(a.w.opID, b.w.opID) })
	return batch
}

// release ends a group: its operations are free for the next, and the
// writers waiting for an end look again. It runs before the group's
// writers are told, so a writer's next write of its operation can be
// taken at once.
func (g *grouper) release(batch []*groupedWrite) {
	g.mu.Lock()
	for _, w := range batch {
		delete(g.busy, w.w.opID)
	}
	if g.linger > 0 {
		g.expect, g.lastEnd = len(batch)+len(g.pending), time.Now()

	}
	close(g.ended)
	g.ended = make(chan struct{})
	g.mu.Unlock()
}

// commitGroup runs batch in one transaction and tells each writer its
// result. When the transaction as a whole fails (a statement failed and
// aborted it, or a lock wait timed out), each write runs again alone, so
// that no write fails for another's sake. The group's transaction follows
// no one caller's context: one caller giving up must not roll back the
// others' writes.
func (s *Store) commitGroup(batch []*groupedWrite) {
	if len(batch) > 1 {
		var errs []error
		err := s.d.Write(context.Background(), func(tx Querier) error {
			var err error
			errs, err = s.runGroup(context.Background(), tx, batch)
			return err
		})
		if err == nil {
			s.g.groups.Add(1)
			s.g.grouped.Add(int64(len(batch)))
			s.g.release(batch)
			for i, w := range batch {
				w.done <- errs[i]
			}
			return
		}
		s.g.broken.Add(1)
	}
	errs := make([]error, len(batch))
	for i, w := range batch {
		errs[i] = s.d.Write(w.ctx, func(tx Querier) error { return s.runAlone(w.ctx, tx, w.w) })
	}
	s.g.release(batch)
	for i, w := range batch {
		w.done <- errs[i]
	}
}

// runGroup runs batch's writes in tx, a dialect's with a chain head row
// (Syntax.HeadRow), in three round trips where the dialect can
// (LockedReader, Committer): every row read under its lock, then the lease
// clock; each write decided in turn; every record's statement and then
// the chain head's lock; their events, the head's move and the COMMIT.
// The head is locked after the rows (lock order rows, then head) and only
// for the last round trip: it is the lock every writer of the fleet, and
// the other group of this process, queues on, so it is held for the
// events and the commit alone, not for the reads, the decisions or the
// records' statements. It returns each write's own refusal, or an error
// for the group when the transaction may be broken.
func (s *Store) runGroup(ctx context.Context, tx Querier, batch []*groupedWrite) ([]error, error) {
	if !s.x.HeadRow {
		return s.runGroupLocal(ctx, tx, batch)
	}
	errs := make([]error, len(batch))
	live := make([]int, 0, len(batch))
	for i, w := range batch {
		if errs[i] = w.ctx.Err(); errs[i] == nil {
			live = append(live, i)
		}
	}
	found := make([]bool, len(batch))
	reads, at, row := s.groupedReads(batch, live, found)
	kt := newKeyTx()
	keys := keysOf(liveWrites(batch, live))
	// The key rows are locked after the operations' rows, in the same
	// round trip, and before the clock is read.
	nops := len(reads)
	reads = append(reads, s.keyReads(kt, keys)...)
	if err := s.readMany(ctx, tx, reads); err != nil {
		return nil, err
	}
	if err := s.lockKeys(ctx, tx, kt, keys, reads[nops:]); err != nil {
		return nil, err
	}
	var stmts []Stmt
	var appends []queuedAppend
	for k, i := range live {
		w := batch[i].w
		r := &reads[at[k]]
		ok, now := r.Found, r.Now
		if row[k] >= 0 {
			ok, now = found[i], r.Nows[row[k]]
		}
		st, evs, err := w.decide(ctx, tx, ok, now, kt)
		if err != nil {
			if !isCheck(err) {
				return nil, err
			}
			errs[i] = err
			continue
		}
		if st == nil {
			continue
		}
		stmts = append(stmts, *st)
		if len(evs) > 0 {
			appends = append(appends, queuedAppend{opID: w.opID, seq: w.chain.Seq, evs: evs})
		}
	}
	if s.x.ArrayUpdates {
		var err error
		if stmts, err = s.q.up.mergeArrays(stmts); err != nil {
			return nil, err
		}
	}
	stmts, err := kt.stmts(stmts)
	if err != nil {
		return nil, err
	}
	if len(appends) > 0 {
		head, err := s.writeThenLockHead(ctx, tx, stmts)
		if err != nil {
			return nil, err
		}
		// Under the head's lock: two first appends cannot both record a mode.
		if err := s.checkSealMode(ctx, tx); err != nil {
			return nil, err
		}
		// An operation has at most one write per group (takeGroup), so
		// each one's seq, read under its row lock, is still its last.
		stmts = stmts[:0]
		locked := head.Pos
		for _, a := range appends {
			head.Seq = a.seq
			for k := range a.evs {
				head.link(&a.evs[k])
			}
		}
		s.g.headSeen(locked, head.Pos)
		stmts = append(s.appendStmts(stmts, appends), s.headStmt(head))
	}
	if err := batchCommit(ctx, tx, stmts); err != nil {
		return nil, err
	}
	return errs, nil
}

// writeThenLockHead runs stmts and then locks the chain head and reads
// it, in one round trip where the dialect can.
func (s *Store) writeThenLockHead(ctx context.Context, tx Querier, stmts []Stmt) (Chain, error) {
	var head Chain
	reads := make([]LockedRead, 0, len(stmts)+1)
	for _, st := range stmts {
		reads = append(reads, LockedRead{SQL: st.SQL, Args: st.Args, NoClock: true})
	}
	reads = append(reads, LockedRead{SQL: headLock + s.x.ForUpdate, Dest: []any{&head.Pos, &head.Hash}, NoClock: true})
	if err := s.readMany(ctx, tx, reads); err != nil {
		return head, err
	}
	if !reads[len(reads)-1].Found {
		return head, fmt.Errorf("lock the audit chain head: %w", ErrNoRows)
	}
	return head, nil
}

// runAlone runs rw alone in tx: as a group of one where the chain head
// has its row, else its row read, its statement and its events one after
// the other (SQLite, whose transaction holds the database's write lock).
func (s *Store) runAlone(ctx context.Context, tx Querier, rw rowWrite) error {
	if s.x.HeadRow {
		errs, err := s.runGroup(ctx, tx, []*groupedWrite{{ctx: ctx, w: rw}})
		if err != nil {
			return err
		}
		return errs[0]
	}
	reads := []LockedRead{rw.read()}
	if err := s.readMany(ctx, tx, reads); err != nil {
		return err
	}
	kt, err := s.lockKeysAlone(ctx, tx, []rowWrite{rw})
	if err != nil {
		return err
	}
	st, evs, err := rw.decide(ctx, tx, reads[0].Found, reads[0].Now, kt)
	if err != nil || st == nil {
		return err
	}
	stmts, err := kt.stmts([]Stmt{*st})
	if err != nil {
		return err
	}
	for _, st := range stmts {
		if _, err := tx.Exec(ctx, st.SQL, st.Args...); err != nil {
			return err
		}
	}
	return s.appendEvents(ctx, tx, rw.opID, *rw.chain, evs)
}

// liveWrites are the writes of batch at the indexes live.
func liveWrites(batch []*groupedWrite, live []int) []rowWrite {
	out := make([]rowWrite, len(live))
	for k, i := range live {
		out[k] = batch[i].w
	}
	return out
}

func (rw rowWrite) read() LockedRead {
	return LockedRead{SQL: rw.query, Args: []any{rw.opID}, Dest: rw.dest, Caller: rw.caller}
}

// readMany reads every row of reads under its lock (or runs the
// statements without Dest), then the lease clock (unless NoClock), in one
// round trip where the dialect can, else one by one.
func (s *Store) readMany(ctx context.Context, tx Querier, reads []LockedRead) error {
	if lr, ok := s.d.(LockedReader); ok {
		return lr.ReadLocked(ctx, tx, reads)
	}
	for i := range reads {
		r := &reads[i]
		if r.Each != nil {
			if err := readEach(ctx, tx, r); err != nil {
				return err
			}
			r.Found = true
			for n, c := range r.Callers {
				now, err := s.d.LeaseNow(ctx, tx, c)
				if err != nil {
					return err
				}
				r.Nows[n] = now
			}
			continue
		}
		if r.Dest == nil {
			if _, err := tx.Exec(ctx, r.SQL, r.Args...); err != nil {
				return err
			}
			r.Found = true
			continue
		}
		err := tx.QueryRow(ctx, r.SQL, r.Args...).Scan(r.Dest...)
		r.Found = err == nil
		if err != nil && !errors.Is(err, ErrNoRows) {
			return err
		}
		if r.NoClock {
			continue
		}
		if r.Now, err = s.d.LeaseNow(ctx, tx, r.Caller); err != nil {
			return err
		}
	}
	return nil
}

// isCheck reports whether a write's error is one of the store's refusals,
// decided in Go before the write changed anything (so its group may still
// commit), rather than a failed statement.
func isCheck(err error) bool {
	for _, e := range []error{pollwarden.ErrLeaseHeld, pollwarden.ErrLeaseLost, pollwarden.ErrConflict,
		pollwarden.ErrNotFound, pollwarden.ErrInvalid} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// queuedAppend is one write's events, to be numbered after its
// operation's last event (seq, read under the row lock) and chained when
// the group appends.
type queuedAppend struct {
	opID string
	seq  int64
	evs  []pollwarden.Event
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

// LingeredGroups is how many groups waited for more writes before they
// were taken (see gather): for tests of when a write may wait.
func (s *Store) LingeredGroups() int64 {
	if s.g == nil {
		return 0
	}
	return s.g.lingered.Load()
}

// BrokenGroups is how many groups of this Store failed as a whole and
// were run again write by write: never, unless a statement of the grouped
// path is wrong or a lock wait timed out; a test of the grouped path
// checks it stays zero, since the one-by-one retry would hide the fault.
func (s *Store) BrokenGroups() int64 {
	if s.g == nil {
		return 0
	}
	return s.g.broken.Load()
}

// PendingGrouped is how many claims and saves wait for a group to take
// them (zero where the store does not group them): for tests that queue
// writes behind a held writer.
func (s *Store) PendingGrouped() int {
	if s.g == nil {
		return 0
	}
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return len(s.g.pending)
}
