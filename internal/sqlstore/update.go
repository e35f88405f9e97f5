package sqlstore

import "strings"

// indexedCols are the record columns an index holds (operations_job,
// operations_phase, operations_due through its WHERE, operations_owner,
// operations_held_by). A
// write names one in its UPDATE only when the value changes: SQLite
// rewrites the index entries of every indexed column named in SET, changed
// or not (pages to write to the WAL and fsync), and PostgreSQL updates a
// row in place (HOT, no index work) only when no indexed column is set to
// a new value. Most saves change none, or only next_poll_at.
var indexedCols = [...]string{"contract", "provider_job_id", "phase", "next_poll_at", "owner", "held_by"}

// storedIndexed holds a row's indexedCols as read by a write's locking
// SELECT, to compare with the values the write would store.
type storedIndexed [len(indexedCols)]string

func (si *storedIndexed) dest() []any {
	d := make([]any, len(si))
	for i := range si {
		d[i] = &si[i]
	}
	return d
}

// The three UPDATEs a write may run: a save, a save that also frees the
// lease, a claim's write with its new lease.
type updateKind int

const (
	updateSave updateKind = iota
	updateRelease
	updateClaim
)

// updates are every UPDATE a write may run, by kind and by which indexed
// columns it sets (bit i set: indexedCols[i] is set), built once so that
// each is a fixed, prepared statement.
type updates struct {
	sql [3][1 << len(indexedCols)]string
	// pos[i] is indexedCols[i]'s place in recordCols (and recordArgs).
	pos [len(indexedCols)]int
	// forms names each statement of sql; multi holds their multi-row
	// forms (see merge).
	forms map[string]updateForm
	multi *multiUpdates
	// arrays holds their forms of unnested arrays (see mergeArrays).
	arrays *arrayUpdates
}

func buildUpdates() updates {
	u := updates{forms: map[string]updateForm{}, multi: &multiUpdates{}, arrays: &arrayUpdates{}}
	index := map[string]int{}
	for i, c := range indexedCols {
		index[c] = i
	}
	for i, c := range recordCols {
		if j, ok := index[c]; ok {
			u.pos[j] = i
		}
	}
	tails := [3]string{
		updateSave:    " WHERE id = ?",
		updateRelease: ", lease_owner = NULL, lease_expires_at = NULL WHERE id = ?",
		updateClaim:   ", lease_owner = ?, lease_epoch = ?, lease_expires_at = ? WHERE id = ?",
	}
	for mask := range u.sql[0] {
		var set []string
		for _, c := range recordCols {
			if j, ok := index[c]; ok && mask&(1<<j) == 0 {
				continue
			}
			set = append(set, c+" = ?")
		}
		for k, tail := range tails {
			u.sql[k][mask] = "UPDATE operations SET " + strings.Join(set, ", ") + tail
			u.forms[u.sql[k][mask]] = updateForm{kind: updateKind(k), mask: mask}
		}
	}
	return u
}

// stmt is the UPDATE of kind that stores args (recordArgs' values) over
// a row whose indexed columns are stored, setting only the indexed
// columns whose value changes, and the arguments it takes, args without
// the unchanged ones (the caller appends the kind's own).
func (u *updates) stmt(kind updateKind, stored *storedIndexed, args []any) (string, []any) {
	mask := 0
	for j, p := range u.pos {
		if v, ok := args[p].(string); !ok || v != stored[j] {
			mask |= 1 << j
		}
	}
	if mask == len(u.sql[0])-1 {
		return u.sql[kind][mask], args[:len(args):len(args)]
	}
	out := make([]any, 0, len(args)+4)
	for i, a := range args {
		if j := u.column(i); j >= 0 && mask&(1<<j) == 0 {
			continue
		}
		out = append(out, a)
	}
	return u.sql[kind][mask], out
}

// column is the index in indexedCols of recordCols[i], or -1.
func (u *updates) column(i int) int {
	for j, p := range u.pos {
		if p == i {
			return j
		}
	}
	return -1
}
