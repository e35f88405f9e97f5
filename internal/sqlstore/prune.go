package sqlstore

import (
	"context"
	"errors"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
)

// pruneBatch bounds one prune transaction, so a large prune never holds
// the write lock (SQLite) or many row locks (PostgreSQL) for long.
const pruneBatch = 200

// finishedPhases is pollwarden.Phase.Finished in SQL; the migration's
// triggers name the same four.
const finishedPhases = "phase IN ('succeeded', 'failed', 'cancelled', 'expired')"

// OperationPrune implements pollwarden.Pruner: a batch of finished
// operations at a time, each re-checked under its row lock, its events'
// payloads replaced by audit.PrunedPayload, then its record deleted.
func (s *Store) OperationPrune(ctx context.Context, p pollwarden.PruneParams) (pollwarden.PruneResult, error) {
	var res pollwarden.PruneResult
	cutoff := FormatTime(p.FinishedBefore)
	if p.DryRun {
		err := s.d.Reader().QueryRow(ctx, "SELECT count(*), coalesce(sum((SELECT count(*) FROM events WHERE operation_id = operations.id)), 0) FROM operations WHERE "+
			finishedPhases+" AND finished_at IS NOT NULL AND finished_at < ?", cutoff).Scan(&res.Operations, &res.Events)
		if err != nil {
			return res, s.fail(err, "count operations to prune")
		}
		return res, nil
	}
	for {
		ids, err := s.pruneCandidates(ctx, cutoff)
		if err != nil || len(ids) == 0 {
			return res, err
		}
		var batch pollwarden.PruneResult
		err = s.d.Write(ctx, func(tx Querier) error {
			batch = pollwarden.PruneResult{}
			for _, id := range ids {
				var locked string
				err := tx.QueryRow(ctx, "SELECT id FROM operations WHERE id = ? AND "+finishedPhases+
					" AND finished_at IS NOT NULL AND finished_at < ?"+s.x.ForUpdate, id, cutoff).Scan(&locked)
				if errors.Is(err, ErrNoRows) {
					continue // changed or removed since it was listed
				}
				if err != nil {
					return err
				}
				events, err := tx.Exec(ctx, "UPDATE events SET payload = ? WHERE operation_id = ? AND payload <> ?",
					[]byte(audit.PrunedPayload), id, []byte(audit.PrunedPayload))
				if err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, "DELETE FROM operations WHERE id = ?", id); err != nil {
					return err
				}
				batch.Operations++
				batch.Events += events
			}
			return nil
		})
		if err != nil {
			return res, s.fail(err, "prune operations")
		}
		res.Operations += batch.Operations
		res.Events += batch.Events
		if batch.Operations == 0 {
			return res, nil
		}
	}
}

// pruneCandidates lists a batch of the operations finished before cutoff.
func (s *Store) pruneCandidates(ctx context.Context, cutoff string) ([]string, error) {
	rows, err := s.d.Reader().Query(ctx, "SELECT id FROM operations WHERE "+finishedPhases+
		" AND finished_at IS NOT NULL AND finished_at < ? ORDER BY finished_at, id LIMIT ?", cutoff, pruneBatch)
	if err != nil {
		return nil, s.fail(err, "list operations to prune")
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.fail(err, "list operations to prune")
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
