package sqlstore

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// The records of a group in one statement where the dialect takes arrays
// (Syntax.ArrayUpdates, PostgreSQL): an UPDATE … FROM unnest(arrays), one
// array per column, joined on the id. Its text is fixed per form (kind and
// indexed mask), whatever the group's size, so the server plans it once
// per connection; each statement costs the server its parse, bind and
// executor start, which a group of 64 single-row UPDATEs paid 64 times.
// The rows were locked by the group's reads, so the statement takes no new
// lock and its order does not matter.

// bigintCols are the operations columns of type bigint (the others a write
// sets are text, and record is json, sent as text).
var bigintCols = map[string]bool{
	"status_requests_used": true, "max_status_requests": true, "transport_failures_used": true,
	"max_transport_failures": true, "rate_limited_used": true, "max_rate_limited": true,
	"completed_polls": true, "version": true, "lease_epoch": true,
}

// arrayUpdates are the array forms of updates' statements, by form, built
// when first used.
type arrayUpdates struct {
	mu sync.Mutex
	m  map[updateForm]arrayForm
}

// arrayForm is one UPDATE of arrays and the type of each of its arrays, in
// the order of the single-row statement's arguments.
type arrayForm struct {
	sql    string
	bigint []bool
}

// columns are the columns that form f's single-row statement sets, in the
// order of its arguments, and "id" last.
func (u *updates) columns(f updateForm) []string {
	var cols []string
	for i, c := range recordCols {
		if j := u.column(i); j >= 0 && f.mask&(1<<j) == 0 {
			continue
		}
		cols = append(cols, c)
	}
	if f.kind == updateClaim {
		cols = append(cols, "lease_owner", "lease_epoch", "lease_expires_at")
	}
	return append(cols, "id")
}

func (u *updates) arrayForm(f updateForm) arrayForm {
	u.arrays.mu.Lock()
	defer u.arrays.mu.Unlock()
	if af, ok := u.arrays.m[f]; ok {
		return af
	}
	cols := u.columns(f)
	var set, arrays, names []string
	af := arrayForm{bigint: make([]bool, len(cols))}
	for k, c := range cols {
		v := "v.c" + strconv.Itoa(k)
		names = append(names, "c"+strconv.Itoa(k))
		switch {
		case bigintCols[c]:
			af.bigint[k] = true
			arrays = append(arrays, "?::bigint[]")
		default:
			arrays = append(arrays, "?::text[]")
		}
		switch c {
		case "id":
		case "record":
			set = append(set, c+" = "+v+"::json")
		default:
			set = append(set, c+" = "+v)
		}
	}
	if f.kind == updateRelease {
		set = append(set, "lease_owner = NULL", "lease_expires_at = NULL")
	}
	af.sql = "UPDATE operations SET " + strings.Join(set, ", ") + " FROM unnest(" + strings.Join(arrays, ", ") +
		") AS v(" + strings.Join(names, ", ") + ") WHERE operations.id = v.c" + strconv.Itoa(len(cols)-1)
	if u.arrays.m == nil {
		u.arrays.m = map[updateForm]arrayForm{}
	}
	u.arrays.m[f] = af
	return af
}

// mergeArrays turns the single-row UPDATEs of stmts (at most one per
// operation, as a group has) into one UPDATE of arrays per form; other
// statements are kept as they are, before them.
func (u *updates) mergeArrays(stmts []Stmt) ([]Stmt, error) {
	if len(stmts) < 2 {
		return stmts, nil
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
		if len(all) == 1 {
			out = append(out, all[0])
			continue
		}
		af := u.arrayForm(f)
		args := make([]any, len(af.bigint))
		for k, big := range af.bigint {
			if big {
				col := make([]int64, len(all))
				for r, st := range all {
					n, err := asInt64(st.Args[k])
					if err != nil {
						return nil, err
					}
					col[r] = n
				}
				args[k] = col
				continue
			}
			col := make([]*string, len(all))
			for r, st := range all {
				switch v := st.Args[k].(type) {
				case nil:
				case string:
					col[r] = &v
				default:
					return nil, fmt.Errorf("update of arrays: argument %d is %T, not text", k, v)
				}
			}
			args[k] = col
		}
		out = append(out, Stmt{af.sql, args})
	}
	return out, nil
}

func asInt64(v any) (int64, error) {
	switch n := v.(type) {
	case int64:
		return n, nil
	case int:
		return int64(n), nil
	}
	return 0, fmt.Errorf("update of arrays: argument is %T, not an integer", v)
}
