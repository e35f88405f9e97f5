package sqlstore

import (
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
)

// checkEnqueue refuses an outbox enqueue that would store a message no
// dispatcher could send, or move the cursor backwards.
func checkEnqueue(p pollwarden.OutboxEnqueueParams) error {
	if p.From < -1 || p.To < p.From || p.To < 0 {
		return fmt.Errorf("%w: cursor move from %d to %d", pollwarden.ErrInvalid, p.From, p.To)
	}
	for i, m := range p.Messages {
		switch {
		case m.ID == "" || m.Key == "" || m.Endpoint == "" || m.Type == "" || len(m.Body) == 0:
			return fmt.Errorf("%w: message %d needs an id, a key, an endpoint, a type and a body", pollwarden.ErrInvalid, i)
		case m.EventPos <= p.From || m.EventPos > p.To:
			return fmt.Errorf("%w: message %d: event %d outside the enqueued range (%d, %d]", pollwarden.ErrInvalid, i, m.EventPos, p.From, p.To)
		}
		if err := checkTime("message created_at", m.CreatedAt); err != nil || m.CreatedAt.IsZero() {
			return fmt.Errorf("%w: message %d: created_at %v", pollwarden.ErrInvalid, i, m.CreatedAt)
		}
	}
	return nil
}

// checkOutboxClaim refuses a claim without an owner, a time or a positive TTL.
func checkOutboxClaim(p pollwarden.OutboxClaimParams) error {
	if p.Owner == "" || p.Now.IsZero() || p.TTL <= 0 {
		return fmt.Errorf("%w: an outbox claim needs an owner, a time and a positive TTL", pollwarden.ErrInvalid)
	}
	return checkTime("claim expiry", p.Now.Add(p.TTL))
}

// checkSettle refuses a settlement that names no claim or no result.
func checkSettle(p pollwarden.OutboxSettleParams) error {
	switch {
	case p.Seq <= 0 || p.Owner == "" || p.Attempt <= 0 || p.Now.IsZero():
		return fmt.Errorf("%w: an outbox settlement needs a message, its owner, the attempt and a time", pollwarden.ErrInvalid)
	case p.Status != pollwarden.OutboxPending && p.Status != pollwarden.OutboxDelivered && p.Status != pollwarden.OutboxDead:
		return fmt.Errorf("%w: outbox status %q", pollwarden.ErrInvalid, p.Status)
	case p.Status == pollwarden.OutboxPending && p.NextAttemptAt.IsZero():
		return fmt.Errorf("%w: a retry needs its next attempt time", pollwarden.ErrInvalid)
	}
	return checkTime("next attempt", p.NextAttemptAt)
}

// claimLimit is the page a claim takes when it names none.
func claimLimit(n int) int {
	if n <= 0 {
		return 16
	}
	return n
}

// parseTimePtr reads a stored nullable time.
func parseTimePtr(s *string) (*time.Time, error) {
	if s == nil {
		return nil, nil
	}
	t, err := parseTime(*s)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// outboxCols are the webhook_outbox columns scanOutbox reads, in order.
const outboxCols = "seq, webhook_id, key, endpoint, event_pos, operation_id, type, body, created_at, status, " +
	"attempts, next_attempt_at, claim_owner, claim_expires_at, last_status, last_error, settled_at"

// outboxInsertCols are the columns an enqueue writes, in the order of
// outboxInsertArgs.
const outboxInsertCols = "webhook_id, key, endpoint, event_pos, operation_id, type, body, created_at, status, next_attempt_at"

// outboxInsertArgs are the values of OutboxInsertCols for m, pending and
// due at its creation.
func outboxInsertArgs(m pollwarden.OutboxMessage) []any {
	at := FormatTime(m.CreatedAt)
	return []any{m.ID, m.Key, m.Endpoint, m.EventPos, m.OperationID, m.Type, m.Body, at, string(pollwarden.OutboxPending), at}
}

// scanOutbox reads one row of OutboxCols through scan (a driver's Scan).
func scanOutbox(scan func(dest ...any) error) (pollwarden.OutboxMessage, error) {
	var m pollwarden.OutboxMessage
	var created, next, status string
	var owner, claimExp, settled *string
	err := scan(&m.Seq, &m.ID, &m.Key, &m.Endpoint, &m.EventPos, &m.OperationID, &m.Type, &m.Body, &created, &status,
		&m.Attempts, &next, &owner, &claimExp, &m.LastStatus, &m.LastError, &settled)
	if err != nil {
		return m, err
	}
	m.Status = pollwarden.OutboxStatus(status)
	if owner != nil {
		m.ClaimOwner = *owner
	}
	if m.CreatedAt, err = parseTime(created); err != nil {
		return m, err
	}
	if m.NextAttemptAt, err = parseTime(next); err != nil {
		return m, err
	}
	if m.ClaimExpiresAt, err = parseTimePtr(claimExp); err != nil {
		return m, err
	}
	m.SettledAt, err = parseTimePtr(settled)
	return m, err
}

// settleArgs are the values of an outbox settlement's SET clause, in the
// order status, next_attempt_at, last_status, last_error, settled_at; the
// claim is always cleared beside them.
func settleArgs(p pollwarden.OutboxSettleParams) []any {
	next := p.NextAttemptAt
	var settled any
	if p.Status != pollwarden.OutboxPending {
		next = p.Now
		settled = FormatTime(p.Now)
	}
	return []any{string(p.Status), FormatTime(next), p.LastStatus, p.LastError, settled}
}

// outboxRequeueSQL makes a settled message pending again; its placeholders
// are the next attempt time and the seq, in that order ("?" or "$n" is the
// driver's: pass the driver's placeholders).
func outboxRequeueSQL(next, seq string) string {
	return "UPDATE webhook_outbox SET status = 'pending', attempts = 0, next_attempt_at = " + next +
		", claim_owner = NULL, claim_expires_at = NULL, settled_at = NULL" +
		" WHERE seq = " + seq + " AND status <> 'pending'"
}

// requeueMiss explains why a requeue changed no row: the message is unknown
// (ErrNotFound) or still pending (ErrConflict). pending is whether a row
// with that seq exists at all, read after the failed update.
func requeueMiss(seq int64, exists bool) error {
	if !exists {
		return fmt.Errorf("%w: no webhook message %d", pollwarden.ErrNotFound, seq)
	}
	return fmt.Errorf("%w: webhook message %d is still pending: it will be sent without a requeue", pollwarden.ErrConflict, seq)
}
