package sim

import (
	"fmt"
	"strconv"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
)

// Epoch is the wall time the virtual clock's zero maps to when the real
// policy is called. Any fixed time would do.
var Epoch = time.Date(2025, 4, 18, 10, 20, 0, 0, time.UTC)

// contractYAML is the contract every simulated operation runs under: the
// specification's example with base 5 s, max 120 s, deadline 40 min, the
// states running/succeeded and a required result URL. The request budget
// is set out of reach, as the herd has none; the transport-failure and
// rate-limit budgets keep the specification's defaults.
const contractYAML = `version: 1
name: sim-job
status:
  url: "https://x.example.com/v1/jobs/{job_id}"
state:
  path: state
  pending: [running]
  success: [succeeded]
result:
  require:
    - {path: result.url, kind: url}
backoff: {base: 5s, max: 120s}
limits:
  deadline: 40m
  max_status_requests: 1000000
  max_transport_failures: 3
  max_rate_limited: 3
`

// Contract returns the simulated operations' contract, parsed by the
// project's own contract parser.
func Contract() (*pollwarden.ContractSpec, error) {
	c, err := contract.Parse([]byte(contractYAML))
	if err != nil {
		return nil, fmt.Errorf("sim contract: %w", err)
	}
	return c, nil
}

// observations the simulated provider can give, built once and shared
// read-only by every Decide call.
type observations struct {
	running, done, unavailable, limited pollwarden.Observation
}

func newObservations(cfg *Config) *observations {
	o := &observations{
		running: pollwarden.Observation{Status: 200, Body: pollwarden.BodyFacts{State: "running", HasState: true}},
		done: pollwarden.Observation{Status: 200, Body: pollwarden.BodyFacts{State: "succeeded", HasState: true,
			Fields: map[string]any{"result.url": "https://x.example.com/r"}}},
		unavailable: pollwarden.Observation{Status: 503},
		limited:     pollwarden.Observation{Status: 429},
	}
	if cfg.OutageRetryAfter > 0 {
		o.unavailable.RetryAfter = strconv.Itoa(cfg.OutageRetryAfter)
	}
	if cfg.RateLimitRetryAfter > 0 {
		o.limited.RetryAfter = strconv.Itoa(cfg.RateLimitRetryAfter)
	}
	return o
}

func (o *observations) of(a answer) *pollwarden.Observation {
	switch a {
	case ansDone:
		return &o.done
	case ansUnavailable:
		return &o.unavailable
	case ansLimited:
		return &o.limited
	}
	return &o.running
}

// realPolicy runs every operation through the project's decision core,
// exactly in the controller's order: Gate (deadline, budget, next-poll
// time); if it says Send, CountRequest, send, and Decide on the answer. The
// wake-up time is always the record's NextPollAt, so nothing here chooses
// a delay; an experiment (proposed.go) may move it.
type realPolicy struct {
	id   string
	seed uint64
	c    *pollwarden.ContractSpec
	obs  *observations
	ops  []*pollwarden.Operation
	rngs []rng
	exp  *experiment // nil for "pollwarden"

	// Callbacks (the callback scenario): cb says this strategy acts on
	// them; ledger is what it learned of the contract's callbacks, kept
	// as the daemon's controller keeps it (policy.CallbackLedger).
	cb     bool
	ledger *policy.CallbackLedger

	// fleet, when set, stands between the gate and the request (a
	// ceiling, a shared quota, an incident) and learns from each answer
	// (fleet.go); nil sends whatever the gate lets through.
	fleet fleetHook
}

func newRealPolicy(name string, cfg *Config) (*realPolicy, error) {
	c, err := Contract()
	if err != nil {
		return nil, err
	}
	p := &realPolicy{id: name, seed: cfg.Seed, c: c, obs: newObservations(cfg), cb: cfg.Callbacks}
	if x, ok := experiments[name]; ok {
		p.exp = &x
	}
	if cfg.QuotaRequests > 0 {
		if err := p.joinFleet(cfg); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *realPolicy) name() string { return p.id }

func (p *realPolicy) init(e *engine) {
	n := len(e.pop.start)
	p.ops = make([]*pollwarden.Operation, n)
	p.rngs = make([]rng, n)
	if p.cb {
		p.ledger = policy.NewCallbackLedger()
	}
	// The factors come from one sequence, as from a controller's
	// (policy.FactorSequence), started from the strategy's own stream.
	start := newRNG(p.seed, p.id+"/factors", 0)
	factors := policy.NewFactorSequence(&start)
	for k := range n {
		id := "sim-" + strconv.Itoa(k)
		p.rngs[k] = newRNG(p.seed, p.id, k)
		op, _, err := policy.NewOperation(p.c, policy.NewParams{ID: id, ProviderJobID: id, Rand: factors}, at(e.pop.start[k]))
		if err != nil {
			panic(err) // the contract is a constant; tests cover it
		}
		p.ops[k] = op
	}
}

func at(ns int64) time.Time           { return Epoch.Add(time.Duration(ns)) }
func since(t time.Time) int64         { return int64(t.Sub(Epoch)) }
func (p *realPolicy) rand(k int) *rng { return &p.rngs[k] }

func (p *realPolicy) wake(e *engine, k int, now int64) (int64, bool) {
	t := at(now)
	op := p.ops[k]
	// The controller has been running since the start, or since the end
	// of its down time (restart): only wake-ups missed while it was down
	// are spread (R9).
	up := policy.Uptime{Since: Epoch}
	if d := int64(e.cfg.DownEnd); e.cfg.DownEnd > e.cfg.DownStart && now >= d {
		up.Since = at(d)
	}
	if p.cb {
		// Trusted callbacks: a backoff poll scheduled before the trust
		// was learned waits for the safety net instead.
		if g, held := p.ledger.HoldWaiting(op, p.c, t); held {
			p.ops[k] = g.Op
			return since(g.Until), true
		}
	}
	g := policy.GateUp(op, p.c, t, up)
	switch g.Verdict {
	case policy.Done:
		return 0, false
	case policy.Stop:
		p.ops[k] = g.Op
		e.stop(string(g.Op.Reason))
		return 0, false
	case policy.Wait:
		// A spread late wake-up (R9) changed the record: keep it, as the
		// controller saves it.
		p.ops[k] = g.Op
		return since(g.Until), true
	}
	if p.fleet != nil {
		held, until := p.fleet.admit(e, k, t)
		if held {
			return until, true
		}
		op = p.ops[k]
	}
	reserved, _ := policy.CountRequest(op, p.c, t)
	a := e.send(k, now)
	obs := p.obs.of(a)
	if a == ansLimited && e.lastRA > 0 {
		// The provider's quota says when its window resets.
		o := *obs
		o.RetryAfter = strconv.Itoa(e.lastRA)
		obs = &o
	}
	st := policy.Decide(reserved, p.c, obs, t, p.rand(k))
	if p.fleet != nil {
		p.fleet.answered(e, k, st.Op, obs, t)
	}
	if p.exp != nil {
		p.exp.redraw(st.Op, t, p.rand(k))
	}
	if p.cb {
		p.ledger.Polled(reserved, st.Op, t)
		if st.Op.Phase == pollwarden.PhaseWaiting {
			st = p.ledger.Hold(st, p.c, t)
		}
	}
	p.ops[k] = st.Op
	switch st.Op.Phase {
	case pollwarden.PhaseWaiting:
		return since(st.Op.NextPollAt), true
	case pollwarden.PhaseEscalated:
		e.stop(string(st.Op.Reason))
	case pollwarden.PhaseSucceeded:
		if a != ansDone {
			panic("sim: the policy succeeded on an answer that was not done")
		}
	}
	return 0, false
}

func (p *realPolicy) takesCallbacks() bool { return p.cb }

// callback is operation k's provider callback arriving at now: the
// policy's wake-up (policy.Callback) moves its next request earlier, as
// the daemon's callback endpoint does, and the ledger learns of it.
func (p *realPolicy) callback(_ *engine, k int, now int64) (int64, bool) {
	op := p.ops[k]
	var w policy.CallbackWake
	if op.Phase == pollwarden.PhaseWaiting {
		w = policy.Callback(op, p.c, at(now))
	}
	p.ledger.Callback(op, w)
	if !w.Woken {
		return 0, false
	}
	p.ops[k] = w.Op
	return since(w.Op.NextPollAt), true
}
