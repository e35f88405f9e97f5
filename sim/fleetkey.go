package sim

import (
	"strconv"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// sharedKey is the fleet as pollwarden runs it: one row for the
// credential's key (pollwarden.KeyState), which every operation of every
// process takes its request from (policy.KeyGrant, as the claim does:
// the key's open incident first, then the quota) and teaches what the
// provider answered (policy.KeyNote, as the save does: a rate limit's
// hold, and the failures that open or close an incident). The
// simulation is one timeline, so the row needs no lock.
type sharedKey struct {
	p  *realPolicy
	ks *pollwarden.KeyState
	// oneOwner records every operation under one owner.
	oneOwner bool
}

func newSharedKey(p *realPolicy, oneOwner bool) *sharedKey {
	return &sharedKey{p: p, ks: pollwarden.NewKeyState(pollwarden.QuotaKey(p.c)), oneOwner: oneOwner}
}

// owner is process proc's name, the owner its operations are recorded
// under: fairness shares the quota between them.
func owner(proc int) string { return "proc-" + strconv.Itoa(proc) }

func (s *sharedKey) admit(_ *engine, k int, now time.Time) (bool, int64) {
	op := s.p.ops[k]
	if op.Owner == "" {
		op.Owner = owner(processOf(k))
		if s.oneOwner {
			op.Owner = owner(0)
		}
	}
	ks, g := policy.KeyGrant(s.ks, op, s.p.c, now)
	if ks != nil {
		s.ks = ks
	}
	if g.OK {
		return false, 0
	}
	s.p.ops[k] = held(op, g)
	return true, since(s.p.ops[k].NextPollAt)
}

func (s *sharedKey) answered(e *engine, _ int, op *pollwarden.Operation, obs *pollwarden.Observation, now time.Time) {
	ks, eff := policy.KeyNote(s.ks, op, s.p.c, *obs, now)
	if ks != nil {
		s.ks = ks
	}
	if o := eff.Incident.Opened; o != nil {
		// One notification for the incident (incident.opened), whatever
		// the number of operations it holds.
		e.notify(o.Kind == pollwarden.IncidentOutage, true)
	}
}

// held is op waiting for its key until g.Until, as the claim saves it:
// the next look at that time, with the grant's delay source; nothing
// reserved, no budget spent.
func held(op *pollwarden.Operation, g pollwarden.KeyGrant) *pollwarden.Operation {
	next := *op
	next.NextPollAt, next.NextPollSource, next.NextPollSpread = g.Until, g.Source, false
	return &next
}
