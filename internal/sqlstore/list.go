package sqlstore

import (
	"context"
	"strings"

	"github.com/pollwarden/pollwarden"
)

// OperationList returns records newest first (by creation), optionally only
// those in p.Phase and of p.Owner, and at most p.Limit of them (Limit <= 0:
// all). With p.DueBefore it returns waiting and cancelling operations due
// at or before it, oldest due first: for the waiting ones the literal
// 'waiting' matches the partial index operations_due (a bound parameter
// would not), which then serves the range, the order and the limit; the
// few cancelling ones come through operations_phase, and the two are
// merged. Where the dialect takes hints the indexes are named, because
// SQLite's planner, without statistics, prefers operations_phase and
// sorts every waiting row.
func (s *Store) OperationList(ctx context.Context, p pollwarden.ListParams) ([]*pollwarden.Operation, error) {
	if p.DueBefore.IsZero() {
		return s.list(ctx, p)
	}
	return mergeDue(p, func(phase pollwarden.Phase) ([]*pollwarden.Operation, error) {
		q := p
		q.Phase = phase
		return s.list(ctx, q)
	})
}

// list runs one query of OperationList; with DueBefore, p.Phase is one of
// the due phases.
func (s *Store) list(ctx context.Context, p pollwarden.ListParams) ([]*pollwarden.Operation, error) {
	q, args := s.ListQuery(p)
	rows, err := s.d.Reader().Query(ctx, q, args...)
	if err != nil {
		return nil, s.fail(err, "list operations")
	}
	defer rows.Close()
	var out []*pollwarden.Operation
	due := !p.DueBefore.IsZero()
	for rows.Next() {
		var op *pollwarden.Operation
		if due {
			op, err = s.scanDue(rows)
		} else {
			op, err = scanOp(rows)
		}
		if err != nil {
			return nil, s.fail(err, "list operations")
		}
		out = append(out, op)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err, "list operations")
	}
	return out, nil
}

// likeEscaper makes a searched text match itself in a LIKE pattern.
var likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)

// unleased keeps out of a due listing the operations whose lease is held
// at DueBefore: another step (of this process or another replica) is
// working on each, so a claim could only be refused. Without it, replicas
// sharing a database list the same oldest-due batch and spend their claims
// on one another's operations in flight. It is judged on the lister's
// clock, so it is a hint: the claim still decides on the lease clock.
const unleased = "(lease_expires_at IS NULL OR lease_expires_at <= ?)"

// ListQuery is one query of OperationList and its arguments (with
// DueBefore, p.Phase one of the due phases), exported so that a driver can
// check the plan its database makes of it.
func (s *Store) ListQuery(p pollwarden.ListParams) (string, []any) {
	q := "SELECT version, record FROM operations"
	var where []string
	var args []any
	due := !p.DueBefore.IsZero()
	if due {
		// The id too, for the due cache (see scanDue).
		q = "SELECT id, version, record FROM operations"
	}
	switch {
	case due && p.Phase == pollwarden.PhaseCancelling:
		q += s.x.hint("operations_phase")
		where = append(where, "phase = 'cancelling'", "next_poll_at <= ?", unleased)
		args = append(args, FormatTime(clampYear(p.DueBefore)), FormatTime(clampYear(p.DueBefore)))
	case due:
		q += s.x.hint("operations_due")
		where = append(where, "phase = 'waiting'", "next_poll_at <= ?", unleased)
		args = append(args, FormatTime(clampYear(p.DueBefore)), FormatTime(clampYear(p.DueBefore)))
	}
	if p.Phase != "" && !due {
		where = append(where, "phase = ?")
		args = append(args, string(p.Phase))
	}
	if len(p.Phases) > 0 {
		where = append(where, "phase IN (?"+strings.Repeat(", ?", len(p.Phases)-1)+")")
		for _, ph := range p.Phases {
			args = append(args, string(ph))
		}
	}
	if p.Owner != "" {
		where = append(where, "owner = ?")
		args = append(args, p.Owner)
	}
	if p.Contract != "" {
		where = append(where, "contract = ?")
		args = append(args, p.Contract)
	}
	if p.ProviderJobID != "" {
		where = append(where, "provider_job_id = ?")
		args = append(args, p.ProviderJobID)
	}
	if p.HeldBy != "" {
		// The literal condition lets SQLite use the partial index
		// operations_held_by, which a bound parameter alone would not.
		where = append(where, "held_by <> ''", "held_by = ?")
		args = append(args, p.HeldBy)
	}
	if p.Reason != "" {
		where = append(where, "reason = ?")
		args = append(args, string(p.Reason))
	}
	if p.Text != "" {
		like := "%" + likeEscaper.Replace(strings.ToLower(p.Text)) + "%"
		var ors []string
		for _, col := range []string{"id", "provider_job_id", "contract", s.x.LastState} {
			ors = append(ors, "lower("+col+") LIKE ? ESCAPE '\\'")
			args = append(args, like)
		}
		where = append(where, "("+strings.Join(ors, " OR ")+")")
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	if due {
		q += " ORDER BY next_poll_at, created_order"
	} else {
		q += " ORDER BY created_order DESC"
	}
	if p.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, p.Limit)
	}
	return q, args
}

// scanDue reads a row of a due listing (id, version, record) through the
// store's due cache.
func (s *Store) scanDue(row Row) (*pollwarden.Operation, error) {
	var id, rec string
	var version int64
	if err := row.Scan(&id, &version, &rec); err != nil {
		return nil, err
	}
	return s.due.decode(id, version, rec)
}
