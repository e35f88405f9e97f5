package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// The grouped writes of a store whose transaction holds the database's
// only write lock (SQLite): a group of claims and saves is a handful of
// statements whatever its size — one read of every row per kind of
// write, one multi-row UPDATE per form of UPDATE, one read of the chain's
// head, one multi-row INSERT of every event — instead of six to seven per
// write (a savepoint, the row's read, its UPDATE, its INSERT, the
// savepoint's release). In-process SQLite has no round trips to save; what
// each statement costs is the driver's work around it (binding,
// stepping, resetting), which was most of a step's writer time.

// groupRead is the read of many operations' rows in one statement: the
// columns cols (the single-row read's, made NULL-safe) of each id of a JSON
// array, in the array's order, with a first column saying whether the row
// exists (a missing one reads as zeros).
func groupRead(cols string) string {
	return "SELECT operations.id IS NOT NULL, " + cols +
		" FROM json_each(?) AS j LEFT JOIN operations ON operations.id = j.value ORDER BY j.key"
}

// readGroup reads the rows of batch's live writes (live: their indexes)
// into their dest, one statement per distinct group query, and returns
// whether each was found (by index in batch).
func (s *Store) readGroup(ctx context.Context, tx Querier, batch []*groupedWrite, live []int) ([]bool, error) {
	found := make([]bool, len(batch))
	var order []string
	byQuery := map[string][]int{}
	for _, i := range live {
		q := batch[i].w.group
		if _, ok := byQuery[q]; !ok {
			order = append(order, q)
		}
		byQuery[q] = append(byQuery[q], i)
	}
	for _, q := range order {
		idx := byQuery[q]
		ids := make([]string, len(idx))
		for k, i := range idx {
			ids[k] = batch[i].w.opID
		}
		arr, err := json.Marshal(ids)
		if err != nil {
			return nil, err
		}
		rows, err := tx.Query(ctx, q, string(arr))
		if err != nil {
			return nil, err
		}
		k := 0
		for rows.Next() {
			if k == len(idx) {
				rows.Close()
				return nil, fmt.Errorf("read %d operations: more rows than ids", len(idx))
			}
			i := idx[k]
			dest := make([]any, 0, len(batch[i].w.dest)+1)
			dest = append(dest, &found[i])
			if err := rows.Scan(append(dest, batch[i].w.dest...)...); err != nil {
				rows.Close()
				return nil, err
			}
			k++
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
		if k != len(idx) {
			return nil, fmt.Errorf("read %d operations: %d rows", len(idx), k)
		}
	}
	return found, nil
}

// runGroupLocal is runGroup for a dialect without a chain head row: the
// transaction holds the database's one write lock, so nothing needs
// locking row by row and the head is read once, after the records, from
// the events table. Every write's checks are made in Go on what the one
// read returned, exactly as runAlone makes them; a write they refuse
// leaves the others to commit.
func (s *Store) runGroupLocal(ctx context.Context, tx Querier, batch []*groupedWrite) ([]error, error) {
	errs := make([]error, len(batch))
	live := make([]int, 0, len(batch))
	for i, w := range batch {
		if errs[i] = w.ctx.Err(); errs[i] == nil {
			live = append(live, i)
		}
	}
	found, err := s.readGroup(ctx, tx, batch, live)
	if err != nil {
		return nil, err
	}
	kt, err := s.lockKeysAlone(ctx, tx, liveWrites(batch, live))
	if err != nil {
		return nil, err
	}
	var stmts []Stmt
	var appends []queuedAppend
	for _, i := range live {
		w := batch[i].w
		now, err := s.d.LeaseNow(ctx, tx, w.caller)
		if err != nil {
			return nil, err
		}
		st, evs, err := w.decide(ctx, tx, found[i], now, kt)
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
	stmts = s.q.up.merge(stmts)
	if stmts, err = kt.stmts(stmts); err != nil {
		return nil, err
	}
	if len(appends) > 0 {
		var head Chain
		if err := tx.QueryRow(ctx, "SELECT "+headCols).Scan(&head.Pos, &head.Hash); err != nil {
			return nil, err
		}
		if err := s.checkSealMode(ctx, tx); err != nil {
			return nil, err
		}
		for _, a := range appends {
			head.Seq = a.seq
			for k := range a.evs {
				head.link(&a.evs[k])
			}
		}
		stmts = wideEventStmts(stmts, appends)
	}
	if err := batchCommit(ctx, tx, stmts); err != nil {
		return nil, err
	}
	return errs, nil
}

// maxWideEvents bounds the rows of one INSERT of a group's events: the
// prepared forms (one per row count) stay a fixed set, and a group's
// events (two for most steps, at most maxGroup steps) take one to four.
const maxWideEvents = 48

var wideInsertEvents = func() (q [maxWideEvents]string) {
	row := "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
	values := row
	for i := range q {
		q[i] = "INSERT INTO events (" + eventCols + ") VALUES " + values
		values += ", " + row
	}
	return q
}()

// wideEventStmts inserts the events of appends, already linked, in order
// of pos, maxWideEvents rows a statement.
func wideEventStmts(stmts []Stmt, appends []queuedAppend) []Stmt {
	var args []any
	n := 0
	flush := func() {
		if n > 0 {
			stmts = append(stmts, Stmt{wideInsertEvents[n-1], args})
			args, n = nil, 0
		}
	}
	for _, a := range appends {
		for k := range a.evs {
			e := &a.evs[k]
			if args == nil {
				args = make([]any, 0, 9*maxWideEvents)
			}
			args = append(args, e.Pos, a.opID, e.Seq, FormatTime(e.At), string(e.Kind), e.Payload, e.PrevHash, e.Hash, e.PayloadDigest)
			if n++; n == maxWideEvents {
				flush()
			}
		}
	}
	flush()
	return stmts
}

// updateForm names one of updates' statements: its kind and the mask of
// the indexed columns it sets.
type updateForm struct {
	kind updateKind
	mask int
}

// multiUpdates are the multi-row forms of updates' statements, by form
// and row count, built when first used.
type multiUpdates struct {
	mu sync.Mutex
	m  map[[3]int]string
}

// merge turns the single-row UPDATEs of stmts (one per operation, as a
// group has) into one multi-row UPDATE per form (an UPDATE … FROM a
// VALUES list, joined on the id), in chunks of at most maxGroup rows;
// statements that are not one of updates' are kept as they are.
func (u *updates) merge(stmts []Stmt) []Stmt {
	if len(stmts) < 2 {
		return stmts
	}
	var order []updateForm
	rows := map[updateForm][]Stmt{}
	var out []Stmt
	for _, st := range stmts {
		f, ok := u.forms[st.SQL]
		if !ok {
			out = append(out, st)
			continue
		}
		if _, seen := rows[f]; !seen {
			order = append(order, f)
		}
		rows[f] = append(rows[f], st)
	}
	for _, f := range order {
		all := rows[f]
		for len(all) > 0 {
			n := min(len(all), maxGroup)
			if n == 1 {
				out = append(out, all[0])
				all = all[1:]
				continue
			}
			args := make([]any, 0, n*len(all[0].Args))
			for _, st := range all[:n] {
				args = append(args, st.Args...)
			}
			out = append(out, Stmt{u.multiSQL(f, n), args})
			all = all[n:]
		}
	}
	return out
}

// multiSQL is the UPDATE of n rows of form f: each row of its VALUES list
// holds, in order, the arguments of f's single-row statement (the record's
// columns it sets, the kind's lease columns, the id last).
func (u *updates) multiSQL(f updateForm, n int) string {
	key := [3]int{int(f.kind), f.mask, n}
	u.multi.mu.Lock()
	defer u.multi.mu.Unlock()
	if q, ok := u.multi.m[key]; ok {
		return q
	}
	var set []string
	col := 0
	next := func() string { col++; return "v.column" + strconv.Itoa(col) }
	for i, c := range recordCols {
		if j := u.column(i); j >= 0 && f.mask&(1<<j) == 0 {
			continue
		}
		set = append(set, c+" = "+next())
	}
	switch f.kind {
	case updateRelease:
		set = append(set, "lease_owner = NULL", "lease_expires_at = NULL")
	case updateClaim:
		set = append(set, "lease_owner = "+next(), "lease_epoch = "+next(), "lease_expires_at = "+next())
	}
	id := next()
	row := "(?" + strings.Repeat(", ?", col-1) + ")"
	q := "UPDATE operations SET " + strings.Join(set, ", ") + " FROM (VALUES " + row +
		strings.Repeat(", "+row, n-1) + ") AS v WHERE operations.id = " + id
	if u.multi.m == nil {
		u.multi.m = map[[3]int]string{}
	}
	u.multi.m[key] = q
	return q
}

// GroupStatements are the statements of a group that read or change
// operations' rows (the group reads, and a multi-row UPDATE of each kind
// setting every indexed column), exported so that a driver can check the
// plan its database makes of each: one key lookup per row, no scan.
func (s *Store) GroupStatements() []string {
	out := []string{s.q.groupSave, s.q.groupSaveChain, s.q.groupClaim}
	all := len(s.q.up.sql[0]) - 1
	for _, k := range []updateKind{updateSave, updateRelease, updateClaim} {
		out = append(out, s.q.up.multiSQL(updateForm{kind: k, mask: all}, 3))
	}
	return out
}
