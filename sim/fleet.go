package sim

import (
	"time"

	"github.com/pollwarden/pollwarden"
)

// The fleet scenario's strategies: the same policy alone (each operation
// as if it were the only one, the pollwarden row), with a per-process
// ceiling of the quota divided by the number of processes, and with the
// quota and incidents shared through the key's row.
const (
	FleetCeiling = "pollwarden-ceiling"
	FleetShared  = "pollwarden-fleet"
	// FleetOneOwner is FleetShared with every operation under one owner
	// (one token, or one CLI user, on every process): the quota without
	// its fairness across owners. It runs only when asked for by name.
	FleetOneOwner = "pollwarden-fleet-one-owner"
)

// FleetStrategies are the fleet scenario's strategies, in table order.
var FleetStrategies = []string{Pollwarden, FleetCeiling, FleetShared}

// FleetShares is how the fleet's operations are spread over its
// processes, in tenths: 40, 30, 20 and 10 %. Uneven on purpose: a
// ceiling divided evenly leaves the small processes' share unused while
// the large ones wait.
var FleetShares = []int{4, 3, 2, 1}

// processOf is operation k's process: k's last digit picks a tenth.
func processOf(k int) int {
	d := k % 10
	for p, share := range FleetShares {
		if d < share {
			return p
		}
		d -= share
	}
	return len(FleetShares) - 1
}

// fleetHook stands between the gate and operation k's request: admit
// says whether the request waits (and until when, the record in p.ops[k]
// already saying so), and answered learns from the provider's answer.
type fleetHook interface {
	admit(e *engine, k int, now time.Time) (held bool, until int64)
	answered(e *engine, k int, op *pollwarden.Operation, obs *pollwarden.Observation, now time.Time)
}

// joinFleet sets the strategy's hook for the fleet scenario: a ceiling
// per process, or the shared key; the policy alone (and an experiment)
// has none.
func (p *realPolicy) joinFleet(cfg *Config) error {
	switch p.id {
	case FleetCeiling:
		// Each process may send quota/per/N a second (the
		// limits.max_requests_per_second a fleet of N is told to use),
		// evenly spaced.
		every := int64(cfg.QuotaPer) * int64(cfg.Processes) / int64(cfg.QuotaRequests)
		p.fleet = &ceiling{p: p, every: every, next: make([]int64, cfg.Processes)}
		return nil
	case FleetShared, FleetOneOwner:
		// The contract declares the provider's quota, as a contract's
		// quota block does (quota: {requests, per}).
		c := *p.c
		c.Quota = &pollwarden.QuotaSpec{Requests: cfg.QuotaRequests, Per: cfg.QuotaPer, Key: pollwarden.QuotaKeyCredential}
		p.c = &c
		p.fleet = newSharedKey(p, p.id == FleetOneOwner)
	}
	return nil
}

// ceiling is the per-process rate ceiling: each process sends at most
// one request per every, whatever the other processes do. A request
// that finds its process's ceiling spent waits for it, as the daemon's
// scheduler defers a due operation; the record is left as it is.
type ceiling struct {
	p     *realPolicy
	every int64
	next  []int64
}

func (c *ceiling) admit(_ *engine, k int, now time.Time) (bool, int64) {
	proc, t := processOf(k), since(now)
	if t < c.next[proc] && at(c.next[proc]).Before(c.p.ops[k].DeadlineAt) {
		return true, c.next[proc]
	}
	c.next[proc] = max(t, c.next[proc]) + c.every
	return false, 0
}

func (c *ceiling) answered(*engine, int, *pollwarden.Operation, *pollwarden.Observation, time.Time) {}
