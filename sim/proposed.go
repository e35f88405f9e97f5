package sim

import (
	"math"
	"sort"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// This file holds EXPERIMENTAL strategies: the real policy (Gate,
// Reserve, Decide, unchanged) followed by a change this package
// recommends to the owner of package policy, applied to the record Decide
// returns. They are not the project's policy: the "pollwarden" row of
// every table runs package policy alone. They run only when asked for by
// name (--strategies, or --experimental for "pollwarden-proposed").
//
// The changes, each within the rules (every local delay stays in [50 %,
// 100 %] of R5's raw delay; Retry-After and hints stay minimums; R9's one
// request after a late wake-up stays one request). docs/BENCHMARKS.md
// ("Simulation") has the numbers behind each.
//
//   - spread: a wake-up later than the contract's base delay (the
//     controller was down, the process slept) does not send at once; the
//     one request R9 allows goes out at a time drawn uniformly in
//     [now, now + spread·d), before the deadline, where d is the
//     operation's next raw delay (or, when the experiment changes the
//     jitter, the delay it would draw next).
//   - opFactor: the jitter factor is drawn once per operation instead of
//     once per delay, so that the herd's waves are not peaked sums of
//     uniforms; logFactor makes it log-uniform (0.5·2^u), under which the
//     waves join at the same density.
//   - capHi: once raw has reached max_delay, the factor is drawn in
//     [0.5, capHi] instead of [0.5, 1] (per delay with capPerDelay): the
//     herd has long since spread, and the longest delay sets the
//     detection lag of long jobs.
//   - rateLimitedHi: after a bare 429 (R8), the delay is drawn in
//     [4, rateLimitedHi]·raw instead of [4, 5]·raw, still capped by
//     max_delay, so a herd pushed back by a rate limit comes back spread.
//   - raJitter: after Retry-After, wait RA + U(0, raJitter)·RA.
type experiment struct {
	spread        float64 // late wake-up: first request in U(0, spread)·d (see above)
	opFactor      bool    // the factor in [0.5, hi] is drawn once per operation
	logFactor     bool    // the factor is log-uniform in [0.5, hi] (uniform otherwise)
	capHi         float64 // hi once raw has reached max_delay (1 otherwise)
	capPerDelay   bool    // at the cap, draw the factor per delay even with opFactor
	rateLimitedHi float64 // bare 429: delay in [4, rateLimitedHi]·raw, capped (policy: 5)
	raJitter      float64 // Retry-After: wait RA + U(0, raJitter)·RA (policy: RA)
}

// experiments are the named experimental strategies. Proposed is the
// recommended combination; the others isolate one change each.
var experiments = map[string]experiment{
	Proposed:                     {spread: 1, opFactor: true, logFactor: true, capHi: 0.7, capPerDelay: true, rateLimitedHi: 8},
	"pollwarden-exp-spread":      {spread: 1},
	"pollwarden-exp-spread-half": {spread: 0.5},
	"pollwarden-exp-factor":      {opFactor: true},
	"pollwarden-exp-logfactor":   {opFactor: true, logFactor: true},
	"pollwarden-exp-cap70":       {capHi: 0.7},
	"pollwarden-exp-cap80":       {capHi: 0.8},
	"pollwarden-exp-log-cap70":   {opFactor: true, logFactor: true, capHi: 0.7},
	"pollwarden-exp-log-cap70u":  {opFactor: true, logFactor: true, capHi: 0.7, capPerDelay: true},
	"pollwarden-exp-log-cap80u":  {opFactor: true, logFactor: true, capHi: 0.8, capPerDelay: true},
	"pollwarden-exp-rl8":         {rateLimitedHi: 8},
	"pollwarden-exp-ra25":        {raJitter: 0.25},
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

// factor maps u in [0, 1) to a jitter factor in [0.5, hi].
func (x *experiment) factor(u, hi float64) float64 {
	if x.logFactor {
		return 0.5 * math.Pow(2*hi, u)
	}
	return 0.5 + (hi-0.5)*u
}

// delay is the experiment's local-backoff delay for raw; opU is the
// operation's own draw (used when opFactor is set).
func (x *experiment) delay(raw, maxDelay time.Duration, opU float64, r policy.Rand) time.Duration {
	hi, perOp := 1.0, x.opFactor
	if x.capHi > 0 && raw >= maxDelay {
		hi = x.capHi
		perOp = perOp && !x.capPerDelay
	}
	u := opU
	if !perOp {
		u = r.Float64()
	}
	return time.Duration(x.factor(u, hi) * float64(raw))
}

// spreadLate applies the spread change: ok is true when the request is
// postponed, and next is the record with its new NextPollAt (to be saved
// before sleeping, like any schedule).
func (x *experiment) spreadLate(op *pollwarden.Operation, c *pollwarden.Contract, now time.Time, opU float64, r policy.Rand) (*pollwarden.Operation, bool) {
	if x.spread <= 0 || now.Sub(op.NextPollAt) <= c.Backoff.Base {
		return nil, false
	}
	d := policy.RawDelay(c.Backoff, op.CompletedPolls)
	if x.opFactor || x.capHi > 0 {
		d = x.delay(d, c.Backoff.Max, opU, r)
	}
	at := now.Add(time.Duration(r.Float64() * x.spread * float64(d)))
	if !at.Before(op.DeadlineAt) {
		// Spreading would reach the deadline: send the one request now,
		// while it is still allowed.
		return nil, false
	}
	next := op.Clone()
	next.NextPollAt = at
	return next, true
}

// redraw replaces the delay Decide chose for op (after an answer a) by
// the experiment's: local backoff by delay, a bare 429 by the wider
// window, Retry-After plus its jitter. opU is the operation's own draw.
// The policy's deadline check is kept: a new time at or past the deadline
// keeps the policy's own.
func (x *experiment) redraw(op *pollwarden.Operation, c *pollwarden.Contract, a answer, now time.Time, opU float64, r policy.Rand) {
	if op.Phase != pollwarden.PhaseWaiting {
		return
	}
	// Decide has already counted this poll, as its own draw did.
	raw := policy.RawDelay(c.Backoff, op.CompletedPolls)
	var d time.Duration
	switch {
	case op.NextPollSource == pollwarden.DelayRetryAfter:
		if x.raJitter <= 0 {
			return
		}
		ra := op.NextPollAt.Sub(now)
		d = ra + time.Duration(r.Float64()*x.raJitter*float64(ra))
	case op.NextPollSource != pollwarden.DelayLocalBackoff:
		return
	case a == ansLimited:
		if x.rateLimitedHi <= 5 {
			return
		}
		lo := min(4*raw, c.Backoff.Max)
		hi := min(time.Duration(x.rateLimitedHi*float64(raw)), c.Backoff.Max)
		d = lo + time.Duration(r.Float64()*float64(hi-lo))
	case x.opFactor || x.capHi > 0:
		d = x.delay(raw, c.Backoff.Max, opU, r)
	default:
		return
	}
	if at := now.Add(d); at.Before(op.DeadlineAt) {
		op.NextPollAt = at
	}
}
