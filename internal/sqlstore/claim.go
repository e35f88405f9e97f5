package sqlstore

import (
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
)

// checkClaim refuses, before any transaction, a claim that names no
// operation, owner or change, asks for no lease time, or brings a copy
// of another operation.
func checkClaim(p pollwarden.ClaimParams) error {
	if p.OperationID == "" || p.Owner == "" || p.TTL <= 0 || p.Change == nil {
		return fmt.Errorf("%w: need an operation id, an owner, a positive TTL and a Change function", pollwarden.ErrInvalid)
	}
	if p.Have != nil && p.Have.ID != p.OperationID {
		return fmt.Errorf("%w: Have is operation %q, the claim is for %q", pollwarden.ErrInvalid, p.Have.ID, p.OperationID)
	}
	return nil
}

// Claim is what a claim transaction writes, decided from the row read
// under the write lock.
type Claim struct {
	// Op is the record to store, its Version already incremented; nil
	// when Change took nothing (then nothing is written).
	Op *pollwarden.Operation
	// Events are the change's events as Change returned them (to
	// publish after the commit); Prepared are the same, encoded for the
	// store.
	Events, Prepared []pollwarden.Event
	// Lease is the lease to store with Op: the next epoch, expiring TTL
	// after now.
	Lease *pollwarden.Lease
}

// preClaim runs the change on p.Have before the transaction, so that
// the transaction, when it finds the stored version still Have's, only
// checks and writes (see pollwarden.ClaimParams.Have): the decoding of the
// stored record, the caller's checks and the events' encoding and sealing
// then happen outside the store's write lock. It returns nil without Have.
func preClaim(sealer audit.Sealer, p pollwarden.ClaimParams) (*Claim, *pollwarden.Operation, error) {
	if p.Have == nil {
		return nil, nil, nil
	}
	read := p.Have.Clone()
	cl, err := applyChange(sealer, read, p)
	if err != nil {
		return nil, nil, err
	}
	return &cl, read, nil
}

// claimable reports ErrLeaseHeld while the stored lease is held at now.
func (ls Lease) claimable(now time.Time) error {
	held, err := ls.heldAt(now)
	if err != nil {
		return err
	}
	if held {
		return ls.heldError()
	}
	return nil
}

// applyChange calls p.Change with a copy of read and checks its answer: a
// change must keep the operation's id and the version it was given,
// since it is saved over exactly that record. The Claim has no lease yet
// (see take); its Op is nil when Change took nothing.
func applyChange(sealer audit.Sealer, read *pollwarden.Operation, p pollwarden.ClaimParams) (Claim, error) {
	next, events := p.Change(read.Clone())
	if next == nil {
		return Claim{}, nil
	}
	if next.ID != read.ID || next.Version != read.Version {
		return Claim{}, fmt.Errorf("%w: the change is for operation %q version %d, the record read is %q version %d",
			pollwarden.ErrInvalid, next.ID, next.Version, read.ID, read.Version)
	}
	prepared, err := prepareEvents(sealer, read.ID, events)
	if err != nil {
		return Claim{}, err
	}
	rec := *next
	rec.Version++
	return Claim{Op: &rec, Events: events, Prepared: prepared}, nil
}

// take gives a change the lease it is stored with: the next epoch
// after the stored one, expiring TTL after now. A refused claim (no Op)
// takes nothing.
func (c *Claim) take(ls Lease, now time.Time, p pollwarden.ClaimParams) error {
	if c.Op == nil {
		return nil
	}
	exp := now.Add(p.TTL)
	if err := checkTime("lease expiry", exp); err != nil {
		return fmt.Errorf("%w: %v", pollwarden.ErrInvalid, err)
	}
	c.Lease = &pollwarden.Lease{OperationID: c.Op.ID, Owner: p.Owner, Epoch: ls.Epoch + 1, ExpiresAt: exp}
	return nil
}
