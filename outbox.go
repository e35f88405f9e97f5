package pollwarden

import (
	"context"
	"time"
)

// Outbox is the durable queue of webhook deliveries that `pollwarden serve`
// keeps beside a Store (docs/webhooks.md). It is a separate interface, not
// part of Store, so that a Store brought by an embedder need not implement
// webhooks; both bundled drivers implement it.
//
// The audit events are the outbox's source: a dispatcher reads them after a
// stored cursor and, in one transaction, inserts the messages they call for
// and moves the cursor with a compare-and-set, so that several dispatchers
// on one store never enqueue an event twice or skip one.
type Outbox interface {
	// OutboxCursor returns the audit position up to which events have been
	// turned into messages; -1 before the first OutboxEnqueue.
	OutboxCursor(ctx context.Context) (int64, error)
	// OutboxEnqueue moves the cursor from p.From to p.To and inserts
	// p.Messages, all in one transaction. It fails with ErrConflict (and
	// changes nothing) when the cursor is no longer p.From. A message whose
	// (Endpoint, Key) is already stored is skipped, so enqueueing is
	// idempotent per endpoint and key.
	OutboxEnqueue(ctx context.Context, p OutboxEnqueueParams) error
	// OutboxClaim takes up to p.Limit pending messages due at p.Now whose
	// endpoint is in p.Endpoints and that no unexpired claim holds; it sets
	// their claim to p.Owner until p.Now+p.TTL and counts one more attempt.
	// Two owners never hold one message at once; a claim left by a dead
	// owner can be taken once it expires.
	OutboxClaim(ctx context.Context, p OutboxClaimParams) ([]OutboxMessage, error)
	// OutboxSettle records the result of an attempt: delivered, dead, or
	// pending again (due at p.NextAttemptAt). It fails with ErrLeaseLost
	// when the message is no longer claimed by p.Owner for attempt
	// p.Attempt (its claim expired and another owner took it, or it was
	// settled already).
	OutboxSettle(ctx context.Context, p OutboxSettleParams) error
	// OutboxList returns messages in enqueue order, only those in p.Status
	// when it is set; p.Limit <= 0 means all.
	OutboxList(ctx context.Context, p OutboxListParams) ([]OutboxMessage, error)
	// OutboxRequeue makes a dead or delivered message pending again, due
	// at now, with its attempts counted from zero: an operator sends it
	// again (same webhook-id, same body) once the receiver is fixed. It
	// fails with ErrNotFound for an unknown seq and ErrConflict for a
	// message still pending, which would be sent anyway.
	OutboxRequeue(ctx context.Context, seq int64, now time.Time) error
}

// OutboxStatus is where a message stands.
type OutboxStatus string

// The outbox statuses.
const (
	OutboxPending   OutboxStatus = "pending"
	OutboxDelivered OutboxStatus = "delivered"
	OutboxDead      OutboxStatus = "dead"
)

// OutboxMessage is one webhook delivery to one endpoint. Body is built
// once, when the message is enqueued, so every attempt sends the same
// bytes under the same ID (the webhook-id receivers deduplicate on).
type OutboxMessage struct {
	// Seq is the store's number for the message (1, 2, 3…), in enqueue order.
	Seq int64
	// ID is the webhook-id; the same for every endpoint of one event.
	ID string
	// Key names what the message announces; unique per Endpoint.
	Key         string
	Endpoint    string
	EventPos    int64
	OperationID string
	Type        string
	Body        []byte
	CreatedAt   time.Time

	Status         OutboxStatus
	Attempts       int
	NextAttemptAt  time.Time
	ClaimOwner     string
	ClaimExpiresAt *time.Time
	// LastStatus is the HTTP status of the last attempt (0: no answer).
	LastStatus int
	LastError  string
	SettledAt  *time.Time
}

// OutboxEnqueueParams is the input of OutboxEnqueue. Each message needs ID,
// Key, Endpoint, EventPos, OperationID, Type, Body and CreatedAt; it
// becomes pending, due at CreatedAt.
type OutboxEnqueueParams struct {
	From, To int64
	Messages []OutboxMessage
}

// OutboxClaimParams is the input of OutboxClaim.
type OutboxClaimParams struct {
	Owner     string
	Endpoints []string
	Now       time.Time
	TTL       time.Duration
	Limit     int
}

// OutboxSettleParams is the input of OutboxSettle. Status is
// OutboxDelivered, OutboxDead, or OutboxPending for a retry at
// NextAttemptAt.
type OutboxSettleParams struct {
	Seq           int64
	Owner         string
	Attempt       int
	Status        OutboxStatus
	NextAttemptAt time.Time
	LastStatus    int
	LastError     string
	Now           time.Time
}

// OutboxListParams filters OutboxList.
type OutboxListParams struct {
	Status OutboxStatus
	Limit  int
}
