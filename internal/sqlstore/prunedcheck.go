package sqlstore

import (
	"context"
	"errors"

	"github.com/pollwarden/pollwarden/audit"
)

// prunedChecks find a pruned payload where a prune never puts one, each
// with the reason audit verify gives. A prune blanks every event of a
// finished operation and then deletes its record, so a pruned event of an
// operation that still has a record, that keeps an unpruned event, or
// whose trail never finished was blanked by someone else: a payload
// (a decision, say) removed from a copy of the store, where the triggers
// are not there to stop it.
var prunedChecks = []struct{ where, why string }{
	{"EXISTS (SELECT 1 FROM operations o WHERE o.id = e.operation_id)",
		"the payload is marked pruned but the operation still has its record: a prune removes the record with the payloads"},
	{"EXISTS (SELECT 1 FROM events u WHERE u.operation_id = e.operation_id AND u.payload <> ?)",
		"the payload is marked pruned but other events of the operation are not: a prune drops every payload of an operation"},
	// Every way to a finished phase records one of these kinds: a
	// success, a finish (failure, cancel, expiry, refused submission) or
	// a decision (abandon, and a default applied at expiry).
	{"NOT EXISTS (SELECT 1 FROM events f WHERE f.operation_id = e.operation_id AND f.kind IN ('succeeded', 'finished', 'decision'))",
		"the payload is marked pruned but the operation never finished: only a finished operation is pruned"},
}

// PrunedMisplaced implements audit.PrunedChecker: the first event (by
// position) whose pruned payload no prune could have left, nil when there
// is none.
func (s *Store) PrunedMisplaced(ctx context.Context) (*audit.ChainError, error) {
	pruned := []byte(audit.PrunedPayload)
	var first *audit.ChainError
	for _, c := range prunedChecks {
		args := []any{pruned}
		if c.where == prunedChecks[1].where {
			args = append(args, pruned)
		}
		var ce audit.ChainError
		err := s.d.Reader().QueryRow(ctx, "SELECT e.pos, e.operation_id, e.seq FROM events e WHERE e.payload = ? AND "+
			c.where+" ORDER BY e.pos LIMIT 1", args...).Scan(&ce.Pos, &ce.OperationID, &ce.Seq)
		if errors.Is(err, ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, s.fail(err, "check pruned events")
		}
		if first == nil || ce.Pos < first.Pos {
			ce.Problem, ce.Detail = audit.ProblemPruned, c.why
			first = &ce
		}
	}
	return first, nil
}
