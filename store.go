package pollwarden

import (
	"context"
	"time"
)

// Store keeps operation records, their audit events and their leases.
// Implementations must be safe for concurrent use by several goroutines and,
// for the SQLite driver, several processes sharing one file. Every write
// that changes a record appends its events in the same transaction.
type Store interface {
	// OperationCreate stores a new record (Version 0 becomes 1) with its
	// first events. It fails with ErrExists if the id is taken.
	OperationCreate(ctx context.Context, op *Operation, events []Event) error
	// OperationGet returns the record or ErrNotFound.
	OperationGet(ctx context.Context, id string) (*Operation, error)
	// OperationList returns records, newest first, filtered by p.
	OperationList(ctx context.Context, p ListParams) ([]*Operation, error)
	// OperationSave replaces the record if its stored version is still
	// op.Version (else ErrConflict) and, when lease is non-nil, that lease
	// is still current and unexpired at now (else ErrLeaseLost). Without a
	// lease, the save fails with ErrLeaseHeld while another owner holds an
	// unexpired lease. On success op.Version is incremented and the events
	// are appended.
	OperationSave(ctx context.Context, p SaveParams) error
	// LeaseAcquire takes the lease if it is free or expired at p.Now,
	// increasing its epoch; otherwise ErrLeaseHeld.
	LeaseAcquire(ctx context.Context, p LeaseParams) (*Lease, error)
	// LeaseRelease frees the lease if l is still current; releasing a lost
	// lease is not an error.
	LeaseRelease(ctx context.Context, l *Lease) error
	// EventList returns an operation's events in order.
	EventList(ctx context.Context, operationID string) ([]Event, error)
	// Close releases the store's resources.
	Close() error
}

// ListParams filters OperationList. Zero values mean "any".
type ListParams struct {
	Phase Phase
	Limit int
}

// SaveParams is the input of OperationSave.
type SaveParams struct {
	Op     *Operation
	Lease  *Lease
	Events []Event
	Now    time.Time
}

// LeaseParams is the input of LeaseAcquire.
type LeaseParams struct {
	OperationID string
	Owner       string
	Now         time.Time
	TTL         time.Duration
}
