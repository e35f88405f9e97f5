package scheduler

import (
	"context"
	"errors"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// contractFor is the contract op runs under: the one its store keeps
// (compiled once per fingerprint in this process), whatever file of its
// name is loaded here; for a record created before contracts were kept,
// the loaded contract of its name. ok is false when there is neither; err
// is a store that could not be read, for the caller to try again later.
func (s *Scheduler) contractFor(ctx context.Context, op *pollwarden.Operation) (*contract.Loaded, bool, error) {
	ex, ok, err := s.ctl.Kept().Of(ctx, op)
	if errors.Is(err, pollwarden.ErrInvalid) {
		// The record names a contract its store does not hold (or holds
		// damaged): nothing can be sent under it.
		s.log.Error("the contract the operation runs under cannot be read", "operation", op.ID, "contract", op.Contract, "error", err)
		return nil, false, nil
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("reading the contract the operation runs under failed; retrying", "operation", op.ID, "contract", op.Contract, "error", err)
		}
		return nil, false, err
	}
	if ok {
		return ex, true, nil
	}
	ex, ok = s.contracts.Get(op.Contract)
	return ex, ok, nil
}
