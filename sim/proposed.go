package sim

import (
	"sort"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// This file holds the EXPERIMENTAL strategies: the real policy (Gate,
// CountRequest, Decide, unchanged) followed by a change that package policy
// has not adopted, applied to the record Decide returns. They are not the
// project's policy: the "pollwarden" row of every table runs package
// policy alone. They run only when asked for by name (--strategies, or
// --experimental for "pollwarden-proposed").
//
// The changes this simulation once prototyped here — the per-operation
// jitter factor, the narrower factor at the cap, spreading late wake-ups
// and the wider window after a bare 429 — are now package policy's own
// (docs/decisions.md, "Scheduling"). What is left:
//
//   - raJitter: after Retry-After, wait RA + U(0, raJitter)·RA instead of
//     exactly RA. Retry-After stays a minimum (R7). It flattens the return
//     of an outage's refused requests, at a cost in detection lag, and no
//     target of the issue asks for it (docs/BENCHMARKS.md, "Outage").
type experiment struct {
	raJitter float64 // Retry-After: wait RA + U(0, raJitter)·RA (policy: RA)
}

// experiments are the named experimental strategies.
var experiments = map[string]experiment{
	Proposed:              {raJitter: 0.25},
	"pollwarden-exp-ra25": {raJitter: 0.25},
}

// Experiments lists the experimental strategy names, sorted.
func Experiments() []string {
	var out []string
	for k := range experiments {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// redraw replaces the delay Decide chose for op by the experiment's.
// The policy's deadline check is kept: a new time at or past the deadline
// keeps the policy's own.
func (x *experiment) redraw(op *pollwarden.Operation, now time.Time, r policy.Rand) {
	if op.Phase != pollwarden.PhaseWaiting || op.NextPollSource != pollwarden.DelayRetryAfter || x.raJitter <= 0 {
		return
	}
	ra := op.NextPollAt.Sub(now)
	d := ra + time.Duration(r.Float64()*x.raJitter*float64(ra))
	if at := now.Add(d); at.Before(op.DeadlineAt) {
		op.NextPollAt = at
	}
}
