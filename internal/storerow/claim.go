package storerow

import (
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
)

// CheckClaim refuses, before any transaction, a claim that names no
// operation, owner or reservation, or asks for no lease time.
func CheckClaim(p pollwarden.ClaimParams) error {
	if p.OperationID == "" || p.Owner == "" || p.TTL <= 0 || p.Reserve == nil {
		return fmt.Errorf("%w: need an operation id, an owner, a positive TTL and a Reserve function", pollwarden.ErrInvalid)
	}
	return nil
}

// Claim is what a claim transaction writes, decided by DecideClaim from
// the row it read under the write lock.
type Claim struct {
	// Op is the record to store, its Version already incremented; nil
	// when Reserve took nothing (then nothing is written).
	Op *pollwarden.Operation
	// Events are the reservation's events as Reserve returned them (to
	// publish after the commit); Prepared are the same, encoded for the
	// store.
	Events, Prepared []pollwarden.Event
	// Lease is the lease to store with Op: the next epoch, expiring TTL
	// after now.
	Lease *pollwarden.Lease
}

// DecideClaim applies OperationClaim's rules to the stored row: the lease
// must be free or expired at now (else ErrLeaseHeld, and Reserve is not
// called); then Reserve sees a copy of the stored record. A reservation
// must keep the operation's id and the version it was given, since the
// transaction saves it over exactly that record. Its events are prepared
// here, under the write lock, because they are only known now.
func DecideClaim(sealer audit.Sealer, stored *pollwarden.Operation, ls Lease, now time.Time, p pollwarden.ClaimParams) (Claim, error) {
	held, err := ls.HeldAt(now)
	if err != nil {
		return Claim{}, err
	}
	if held {
		return Claim{}, ls.HeldError()
	}
	exp := now.Add(p.TTL)
	if err := CheckTime("lease expiry", exp); err != nil {
		return Claim{}, fmt.Errorf("%w: %v", pollwarden.ErrInvalid, err)
	}
	next, events := p.Reserve(stored.Clone())
	if next == nil {
		return Claim{}, nil
	}
	if next.ID != stored.ID || next.Version != stored.Version {
		return Claim{}, fmt.Errorf("%w: the reservation is for operation %q version %d, the record read is %q version %d",
			pollwarden.ErrInvalid, next.ID, next.Version, stored.ID, stored.Version)
	}
	prepared, err := PrepareEvents(sealer, stored.ID, events)
	if err != nil {
		return Claim{}, err
	}
	rec := *next
	rec.Version++
	return Claim{Op: &rec, Events: events, Prepared: prepared,
		Lease: &pollwarden.Lease{OperationID: stored.ID, Owner: p.Owner, Epoch: ls.Epoch + 1, ExpiresAt: exp}}, nil
}
