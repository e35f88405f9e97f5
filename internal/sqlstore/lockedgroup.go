package sqlstore

import (
	"context"
	"fmt"
	"time"
)

// Where rows are locked one at a time (Syntax.HeadRow), a group's saves
// read and lock their rows in one statement instead of one each: the
// rows of an array of ids, locked in id order (the order every group
// locks in, so groups never deadlock; a group's claims, which pass locked
// rows instead of waiting, read theirs after), returned one per id in the
// array's order, with a first column saying whether the row exists. A
// statement costs the server its parse, bind and executor start whatever
// it reads; one per write was most of a group's statements.

// lockedGroupRead is that statement for a save's columns (a missing row
// reads as zeros), with chain, the last seq's subquery, when not "".
func lockedGroupRead(indexed, chain string) string {
	inner := "SELECT id, version, " + leaseCols + ", " + indexed
	outer := "SELECT o.id IS NOT NULL, coalesce(o.version, 0), o.lease_owner, coalesce(o.lease_epoch, 0), o.lease_expires_at"
	for _, c := range indexedCols {
		outer += ", coalesce(o." + c + ", '')"
	}
	if chain != "" {
		inner += ", " + chain + " AS seq"
		outer += ", coalesce(o.seq, 0)"
	}
	return outer + " FROM unnest(?::text[]) WITH ORDINALITY AS j(id, n) LEFT JOIN (" + inner +
		" FROM operations WHERE id = ANY(?::text[]) ORDER BY id FOR UPDATE) AS o ON o.id = j.id ORDER BY j.n"
}

// groupedReads are the reads of runGroup: one LockedRead per distinct
// group query of the live writes that have one (saves, where the dialect
// builds them), then one per other write; at[k] is the read of live[k]
// and row[k] its row in that read (-1: a read of its own).
func (s *Store) groupedReads(batch []*groupedWrite, live []int, found []bool) (reads []LockedRead, at, row []int) {
	at, row = make([]int, len(live)), make([]int, len(live))
	byQuery := map[string]int{}
	members := map[int][]int{} // read index -> live indexes, in order
	for k, i := range live {
		w := batch[i].w
		if w.group == "" {
			continue
		}
		r, ok := byQuery[w.group]
		if !ok {
			r = len(reads)
			byQuery[w.group] = r
			reads = append(reads, LockedRead{SQL: w.group})
		}
		at[k], row[k] = r, len(members[r])
		members[r] = append(members[r], k)
	}
	for r := range reads {
		ks := members[r]
		ids := make([]string, len(ks))
		reads[r].Callers = make([]time.Time, len(ks))
		reads[r].Nows = make([]time.Time, len(ks))
		for n, k := range ks {
			w := batch[live[k]].w
			ids[n], reads[r].Callers[n] = w.opID, w.caller
		}
		reads[r].Args = []any{ids, ids}
		next := 0
		reads[r].Each = func(rw Row) error {
			if next == len(ks) {
				return fmt.Errorf("read %d operations: more rows than ids", len(ks))
			}
			i := live[ks[next]]
			next++
			return rw.Scan(append([]any{&found[i]}, batch[i].w.dest...)...)
		}
	}
	for k, i := range live {
		if batch[i].w.group != "" {
			continue
		}
		at[k], row[k] = len(reads), -1
		reads = append(reads, batch[i].w.read())
	}
	return reads, at, row
}

// readEach runs a read of many rows in tx without a LockedReader.
func readEach(ctx context.Context, tx Querier, r *LockedRead) error {
	rows, err := tx.Query(ctx, r.SQL, r.Args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := r.Each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
