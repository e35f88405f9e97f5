package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// OutboxCursor returns the webhook cursor (-1 before the first enqueue).
func (s *Store) OutboxCursor(ctx context.Context) (int64, error) {
	var pos int64
	if err := s.d.Reader().QueryRow(ctx, "SELECT pos FROM webhook_cursor WHERE id = 1").Scan(&pos); err != nil {
		return 0, s.fail(err, "webhook cursor")
	}
	return pos, nil
}

// OutboxEnqueue moves the cursor with a compare-and-set and inserts the
// messages, skipping those whose (endpoint, key) is already stored. The
// conditional UPDATE holds the cursor row, so a second enqueue from the
// same position waits, then finds the cursor moved and fails with
// ErrConflict.
func (s *Store) OutboxEnqueue(ctx context.Context, p pollwarden.OutboxEnqueueParams) error {
	if err := checkEnqueue(p); err != nil {
		return s.fail(err, "enqueue webhooks")
	}
	q := "INSERT INTO webhook_outbox (" + outboxInsertCols + ") VALUES (?" +
		strings.Repeat(", ?", strings.Count(outboxInsertCols, ",")) + ") ON CONFLICT (endpoint, key) DO NOTHING"
	err := s.d.Write(ctx, func(tx Querier) error {
		n, err := tx.Exec(ctx, "UPDATE webhook_cursor SET pos = ? WHERE id = 1 AND pos = ?", p.To, p.From)
		if err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("%w: the webhook cursor is no longer at %d", pollwarden.ErrConflict, p.From)
		}
		for _, m := range p.Messages {
			if _, err := tx.Exec(ctx, q, outboxInsertArgs(m)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.fail(err, "enqueue webhooks")
	}
	return nil
}

// OutboxClaim claims due, unclaimed (or expired-claim) pending messages in
// one statement of a write transaction, so two claimers never take the
// same one; where rows are locked one by one, SKIP LOCKED lets claimers
// pass each other's rows instead of waiting.
func (s *Store) OutboxClaim(ctx context.Context, p pollwarden.OutboxClaimParams) ([]pollwarden.OutboxMessage, error) {
	if err := checkOutboxClaim(p); err != nil {
		return nil, s.fail(err, "claim webhooks")
	}
	if len(p.Endpoints) == 0 {
		return nil, nil
	}
	now := FormatTime(p.Now)
	args := []any{p.Owner, FormatTime(p.Now.Add(p.TTL)), now, now}
	for _, e := range p.Endpoints {
		args = append(args, e)
	}
	args = append(args, claimLimit(p.Limit))
	q := "UPDATE webhook_outbox SET claim_owner = ?, claim_expires_at = ?, attempts = attempts + 1" +
		" WHERE seq IN (SELECT seq FROM webhook_outbox" + s.x.hint("webhook_outbox_due") +
		" WHERE status = 'pending' AND next_attempt_at <= ? AND (claim_expires_at IS NULL OR claim_expires_at <= ?)" +
		" AND endpoint IN (?" + strings.Repeat(", ?", len(p.Endpoints)-1) + ") ORDER BY next_attempt_at, seq LIMIT ?" +
		s.x.SkipLocked + ") RETURNING " + outboxCols
	var out []pollwarden.OutboxMessage
	err := s.d.Write(ctx, func(tx Querier) error {
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		out, err = collectOutbox(rows)
		return err
	})
	if err != nil {
		return nil, s.fail(err, "claim webhooks")
	}
	// RETURNING comes back in no particular order: oldest due first.
	slices.SortFunc(out, func(a, b pollwarden.OutboxMessage) int {
		if c := a.NextAttemptAt.Compare(b.NextAttemptAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	return out, nil
}

// OutboxSettle records an attempt's result if the claim is still p.Owner's
// for attempt p.Attempt.
func (s *Store) OutboxSettle(ctx context.Context, p pollwarden.OutboxSettleParams) error {
	if err := checkSettle(p); err != nil {
		return s.fail(err, "settle webhook %d", p.Seq)
	}
	args := append(settleArgs(p), p.Seq, p.Owner, p.Attempt)
	err := s.d.Write(ctx, func(tx Querier) error {
		n, err := tx.Exec(ctx, "UPDATE webhook_outbox SET status = ?, next_attempt_at = ?, last_status = ?, last_error = ?,"+
			" settled_at = ?, claim_owner = NULL, claim_expires_at = NULL"+
			" WHERE seq = ? AND status = 'pending' AND claim_owner = ? AND attempts = ?", args...)
		if err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("%w: the claim of attempt %d is no longer %s's", pollwarden.ErrLeaseLost, p.Attempt, p.Owner)
		}
		return nil
	})
	if err != nil {
		return s.fail(err, "settle webhook %d", p.Seq)
	}
	return nil
}

// OutboxList returns messages in enqueue order.
func (s *Store) OutboxList(ctx context.Context, p pollwarden.OutboxListParams) ([]pollwarden.OutboxMessage, error) {
	q, args := "SELECT "+outboxCols+" FROM webhook_outbox", []any{}
	if p.Status != "" {
		q += " WHERE status = ?"
		args = append(args, string(p.Status))
	}
	q += " ORDER BY seq"
	if p.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, p.Limit)
	}
	rows, err := s.d.Reader().Query(ctx, q, args...)
	if err != nil {
		return nil, s.fail(err, "list webhooks")
	}
	out, err := collectOutbox(rows)
	if err != nil {
		return nil, s.fail(err, "list webhooks")
	}
	return out, nil
}

// collectOutbox reads every row of OutboxCols and closes rows.
func collectOutbox(rows Rows) ([]pollwarden.OutboxMessage, error) {
	defer rows.Close()
	var out []pollwarden.OutboxMessage
	for rows.Next() {
		m, err := scanOutbox(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// OutboxRequeue makes a dead or delivered message pending again, due at now.
func (s *Store) OutboxRequeue(ctx context.Context, seq int64, now time.Time) error {
	err := s.d.Write(ctx, func(tx Querier) error {
		n, err := tx.Exec(ctx, outboxRequeueSQL("?", "?"), FormatTime(now), seq)
		if err != nil || n == 1 {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM webhook_outbox WHERE seq = ?)", seq).Scan(&exists); err != nil {
			return err
		}
		return requeueMiss(seq, exists)
	})
	if err != nil {
		return s.fail(err, "requeue webhook %d", seq)
	}
	return nil
}
