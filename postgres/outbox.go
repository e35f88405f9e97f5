package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/storerow"
)

var _ pollwarden.Outbox = (*Store)(nil)

// OutboxCursor returns the webhook cursor (-1 before the first enqueue).
func (s *Store) OutboxCursor(ctx context.Context) (int64, error) {
	var pos int64
	if err := s.pool.QueryRow(ctx, "SELECT pos FROM webhook_cursor WHERE id = 1").Scan(&pos); err != nil {
		return 0, fmt.Errorf("postgres: webhook cursor: %w", err)
	}
	return pos, nil
}

// OutboxEnqueue moves the cursor with a compare-and-set and inserts the
// messages, skipping those whose (endpoint, key) is already stored. The
// conditional UPDATE locks the cursor row, so a second replica's enqueue
// from the same position waits, then finds the cursor moved and fails
// with ErrConflict.
func (s *Store) OutboxEnqueue(ctx context.Context, p pollwarden.OutboxEnqueueParams) error {
	if err := storerow.CheckEnqueue(p); err != nil {
		return fmt.Errorf("postgres: enqueue webhooks: %w", err)
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE webhook_cursor SET pos = $1 WHERE id = 1 AND pos = $2", p.To, p.From)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("%w: the webhook cursor is no longer at %d", pollwarden.ErrConflict, p.From)
		}
		q := "INSERT INTO webhook_outbox (" + storerow.OutboxInsertCols + ") VALUES (" + placeholders(1, 10) +
			") ON CONFLICT (endpoint, key) DO NOTHING"
		for _, m := range p.Messages {
			if _, err := tx.Exec(ctx, q, storerow.OutboxInsertArgs(m)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: enqueue webhooks: %w", err)
	}
	return nil
}

// OutboxClaim claims due, unclaimed (or expired-claim) pending messages in
// one statement; SKIP LOCKED lets replicas claim side by side without
// waiting on each other's rows, and never the same row twice.
func (s *Store) OutboxClaim(ctx context.Context, p pollwarden.OutboxClaimParams) ([]pollwarden.OutboxMessage, error) {
	if err := storerow.CheckOutboxClaim(p); err != nil {
		return nil, fmt.Errorf("postgres: claim webhooks: %w", err)
	}
	if len(p.Endpoints) == 0 {
		return nil, nil
	}
	now := storerow.FormatTime(p.Now)
	rows, err := s.pool.Query(ctx, "UPDATE webhook_outbox SET claim_owner = $1, claim_expires_at = $2, attempts = attempts + 1"+
		" WHERE seq IN (SELECT seq FROM webhook_outbox WHERE status = 'pending' AND next_attempt_at <= $3"+
		" AND (claim_expires_at IS NULL OR claim_expires_at <= $3) AND endpoint = ANY($4)"+
		" ORDER BY next_attempt_at, seq LIMIT $5 FOR UPDATE SKIP LOCKED) RETURNING "+storerow.OutboxCols,
		p.Owner, storerow.FormatTime(p.Now.Add(p.TTL)), now, p.Endpoints, storerow.ClaimLimit(p.Limit))
	if err != nil {
		return nil, fmt.Errorf("postgres: claim webhooks: %w", err)
	}
	out, err := collectOutbox(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim webhooks: %w", err)
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
	if err := storerow.CheckSettle(p); err != nil {
		return fmt.Errorf("postgres: settle webhook %d: %w", p.Seq, err)
	}
	args := append(storerow.SettleArgs(p), p.Seq, p.Owner, p.Attempt)
	tag, err := s.pool.Exec(ctx, "UPDATE webhook_outbox SET status = $1, next_attempt_at = $2, last_status = $3, last_error = $4,"+
		" settled_at = $5, claim_owner = NULL, claim_expires_at = NULL"+
		" WHERE seq = $6 AND status = 'pending' AND claim_owner = $7 AND attempts = $8", args...)
	if err != nil {
		return fmt.Errorf("postgres: settle webhook %d: %w", p.Seq, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("postgres: settle webhook %d: %w: the claim of attempt %d is no longer %s's",
			p.Seq, pollwarden.ErrLeaseLost, p.Attempt, p.Owner)
	}
	return nil
}

// OutboxList returns messages in enqueue order.
func (s *Store) OutboxList(ctx context.Context, p pollwarden.OutboxListParams) ([]pollwarden.OutboxMessage, error) {
	q, args := "SELECT "+storerow.OutboxCols+" FROM webhook_outbox", []any{}
	if p.Status != "" {
		args = append(args, string(p.Status))
		q += " WHERE status = $1"
	}
	q += " ORDER BY seq"
	if p.Limit > 0 {
		args = append(args, p.Limit)
		q += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list webhooks: %w", err)
	}
	out, err := collectOutbox(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: list webhooks: %w", err)
	}
	return out, nil
}

// collectOutbox reads every row of OutboxCols and closes rows.
func collectOutbox(rows pgx.Rows) ([]pollwarden.OutboxMessage, error) {
	defer rows.Close()
	var out []pollwarden.OutboxMessage
	for rows.Next() {
		m, err := storerow.ScanOutbox(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// OutboxRequeue makes a dead or delivered message pending again, due at now.
func (s *Store) OutboxRequeue(ctx context.Context, seq int64, now time.Time) error {
	tag, err := s.pool.Exec(ctx, storerow.OutboxRequeueSQL("$1", "$2"), storerow.FormatTime(now), seq)
	if err == nil && tag.RowsAffected() != 1 {
		var exists bool
		if err = s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM webhook_outbox WHERE seq = $1)", seq).Scan(&exists); err == nil {
			err = storerow.RequeueMiss(seq, exists)
		}
	}
	if err != nil {
		return fmt.Errorf("postgres: requeue webhook %d: %w", seq, err)
	}
	return nil
}
