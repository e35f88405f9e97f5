package operations

import (
	"context"
)

// createFirst stores r's operation and, when it is due at once and a step
// slot is free (Options.FirstSteps), claims its first step in the same
// write (controller.CreateClaim): the record, its first events, the
// reservation and the lease commit together, and the request is sent by
// the slot's step after the create is answered, never before the commit
// (R11) nor waited for. Otherwise it is controller.Create, as before.
func (s *Service) createFirst(ctx context.Context, r createPlan) error {
	fs := s.o.FirstSteps
	if fs == nil || !s.ctl.ClaimsAtCreate(r.ex, r.fresh) || !fs.Reserve(r.ex, r.np.ID) {
		return s.ctl.Create(ctx, r.ex, r.fresh, r.events)
	}
	first, err := s.ctl.CreateClaim(ctx, r.ex, r.fresh, r.events)
	if err != nil {
		fs.Cancel(r.np.ID)
		return err
	}
	fs.Start(first.Op(), first.Run)
	return nil
}
