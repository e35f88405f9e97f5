package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/storerow"
)

var _ pollwarden.Outbox = (*Store)(nil)

// OutboxCursor returns the webhook cursor (-1 before the first enqueue).
func (s *Store) OutboxCursor(ctx context.Context) (int64, error) {
	var pos int64
	if err := s.db.QueryRowContext(ctx, "SELECT pos FROM webhook_cursor WHERE id = 1").Scan(&pos); err != nil {
		return 0, fmt.Errorf("sqlite: webhook cursor: %w", err)
	}
	return pos, nil
}

// OutboxEnqueue moves the cursor with a compare-and-set and inserts the
// messages, skipping those whose (endpoint, key) is already stored.
func (s *Store) OutboxEnqueue(ctx context.Context, p pollwarden.OutboxEnqueueParams) error {
	if err := storerow.CheckEnqueue(p); err != nil {
		return fmt.Errorf("sqlite: enqueue webhooks: %w", err)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE webhook_cursor SET pos = ? WHERE id = 1 AND pos = ?", p.To, p.From)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			if err == nil {
				err = fmt.Errorf("%w: the webhook cursor is no longer at %d", pollwarden.ErrConflict, p.From)
			}
			return err
		}
		q := "INSERT INTO webhook_outbox (" + storerow.OutboxInsertCols + ") VALUES (?" +
			strings.Repeat(", ?", strings.Count(storerow.OutboxInsertCols, ",")) + ") ON CONFLICT (endpoint, key) DO NOTHING"
		for _, m := range p.Messages {
			if _, err := tx.ExecContext(ctx, q, storerow.OutboxInsertArgs(m)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: enqueue webhooks: %w", err)
	}
	return nil
}

// OutboxClaim claims due, unclaimed (or expired-claim) pending messages
// inside one write transaction, so two claimers never take the same one.
func (s *Store) OutboxClaim(ctx context.Context, p pollwarden.OutboxClaimParams) ([]pollwarden.OutboxMessage, error) {
	if err := storerow.CheckOutboxClaim(p); err != nil {
		return nil, fmt.Errorf("sqlite: claim webhooks: %w", err)
	}
	if len(p.Endpoints) == 0 {
		return nil, nil
	}
	now, exp := storerow.FormatTime(p.Now), storerow.FormatTime(p.Now.Add(p.TTL))
	var out []pollwarden.OutboxMessage
	err := s.write(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		args := []any{now, now}
		for _, e := range p.Endpoints {
			args = append(args, e)
		}
		args = append(args, storerow.ClaimLimit(p.Limit))
		rows, err := tx.QueryContext(ctx, "SELECT seq FROM webhook_outbox INDEXED BY webhook_outbox_due"+
			" WHERE status = 'pending' AND next_attempt_at <= ? AND (claim_expires_at IS NULL OR claim_expires_at <= ?)"+
			" AND endpoint IN (?"+strings.Repeat(", ?", len(p.Endpoints)-1)+") ORDER BY next_attempt_at, seq LIMIT ?", args...)
		if err != nil {
			return err
		}
		var seqs []int64
		for rows.Next() {
			var seq int64
			if err := rows.Scan(&seq); err != nil {
				rows.Close()
				return err
			}
			seqs = append(seqs, seq)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, seq := range seqs {
			m, err := storerow.ScanOutbox(tx.QueryRowContext(ctx, "UPDATE webhook_outbox SET claim_owner = ?, claim_expires_at = ?,"+
				" attempts = attempts + 1 WHERE seq = ? RETURNING "+storerow.OutboxCols, p.Owner, exp, seq).Scan)
			if err != nil {
				return err
			}
			out = append(out, m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim webhooks: %w", err)
	}
	return out, nil
}

// OutboxSettle records an attempt's result if the claim is still p.Owner's
// for attempt p.Attempt.
func (s *Store) OutboxSettle(ctx context.Context, p pollwarden.OutboxSettleParams) error {
	if err := storerow.CheckSettle(p); err != nil {
		return fmt.Errorf("sqlite: settle webhook %d: %w", p.Seq, err)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		args := append(storerow.SettleArgs(p), p.Seq, p.Owner, p.Attempt)
		res, err := tx.ExecContext(ctx, "UPDATE webhook_outbox SET status = ?, next_attempt_at = ?, last_status = ?, last_error = ?,"+
			" settled_at = ?, claim_owner = NULL, claim_expires_at = NULL"+
			" WHERE seq = ? AND status = 'pending' AND claim_owner = ? AND attempts = ?", args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			if err == nil {
				err = fmt.Errorf("%w: the claim of attempt %d is no longer %s's", pollwarden.ErrLeaseLost, p.Attempt, p.Owner)
			}
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: settle webhook %d: %w", p.Seq, err)
	}
	return nil
}

// OutboxList returns messages in enqueue order.
func (s *Store) OutboxList(ctx context.Context, p pollwarden.OutboxListParams) ([]pollwarden.OutboxMessage, error) {
	q, args := "SELECT "+storerow.OutboxCols+" FROM webhook_outbox", []any{}
	if p.Status != "" {
		q += " WHERE status = ?"
		args = append(args, string(p.Status))
	}
	q += " ORDER BY seq"
	if p.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, p.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list webhooks: %w", err)
	}
	defer rows.Close()
	var out []pollwarden.OutboxMessage
	for rows.Next() {
		m, err := storerow.ScanOutbox(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list webhooks: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list webhooks: %w", err)
	}
	return out, nil
}

// OutboxRequeue makes a dead or delivered message pending again, due at now.
func (s *Store) OutboxRequeue(ctx context.Context, seq int64, now time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, storerow.OutboxRequeueSQL("?", "?"), storerow.FormatTime(now), seq)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var exists bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM webhook_outbox WHERE seq = ?)", seq).Scan(&exists); err != nil {
			return err
		}
		return storerow.RequeueMiss(seq, exists)
	})
	if err != nil {
		return fmt.Errorf("sqlite: requeue webhook %d: %w", seq, err)
	}
	return nil
}
