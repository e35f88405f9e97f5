package sqlstore

import (
	"context"

	"github.com/pollwarden/pollwarden"
)

// OperationClaimMany makes the claims of ps in the fewest grouped
// transactions (see pollwarden.ManyClaimer): every claim is queued for the
// grouper at once, so one group takes them all (up to maxGroup, with
// whatever saves were waiting) instead of each claim finding the groups
// that happen to be forming. Each is the write OperationClaim makes, and
// the group runs them as it runs single claims: rows read in operation id
// order (passed over where another transaction holds them), the quota
// key rows locked after them in key order, the events chained once.
func (s *Store) OperationClaimMany(ctx context.Context, ps []pollwarden.ClaimParams) []pollwarden.ClaimResult {
	out := make([]pollwarden.ClaimResult, len(ps))
	cs := make([]*claimState, len(ps))
	var ws []rowWrite
	var at []int
	for i, p := range ps {
		c, err := s.claimWrite(p)
		if err != nil {
			out[i].Err = s.fail(err, "claim %q", p.OperationID)
			continue
		}
		cs[i] = c
		ws = append(ws, c.w)
		at = append(at, i)
	}
	errs := s.writeGroupedAll(ctx, ws)
	for k, i := range at {
		if errs[k] != nil {
			out[i].Err = s.fail(errs[k], "claim %q", ps[i].OperationID)
			continue
		}
		out[i].Op, out[i].Lease = cs[i].result()
	}
	return out
}

// writeGroupedAll is writeGrouped for many writes queued together: all
// join the pending writes under one lock, so the next group takes them at
// once, and it returns when every one is done, each with its result.
func (s *Store) writeGroupedAll(ctx context.Context, rws []rowWrite) []error {
	errs := make([]error, len(rws))
	if s.g == nil || ctx.Err() != nil {
		for i, rw := range rws {
			errs[i] = s.writeGrouped(ctx, rw)
		}
		return errs
	}
	ws := make([]*groupedWrite, len(rws))
	for i, rw := range rws {
		ws[i] = &groupedWrite{ctx: ctx, w: rw, done: make(chan error, 1)}
	}
	s.g.queue(ws...)
	for i, w := range ws {
		errs[i] = s.awaitGrouped(w)
	}
	return errs
}

// awaitGrouped waits for w, already pending (writeGrouped's and
// OperationClaimMany's writes alike): it commits groups itself whenever a
// slot is free, so a write is never left waiting for a committer that
// does not come. A write in another writer's group, or waiting for one of
// its operation's, looks again when a group ends.
func (s *Store) awaitGrouped(w *groupedWrite) error {
	g := s.g
	for {
		select {
		case err := <-w.done:
			return err
		case g.slot <- struct{}{}:
		}
		ended, done, err := s.drain(w)
		<-g.slot
		if done {
			return err
		}
		select {
		case err := <-w.done:
			return err
		case <-ended:
		}
	}
}
