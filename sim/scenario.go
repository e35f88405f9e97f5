package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// The scenarios.
const (
	Herd      = "herd"
	Outage    = "outage"
	Restart   = "restart"
	RateLimit = "rate-limit"
	Callback  = "callback"
	// Fleet is a shared quota and an outage: see DefaultConfig.
	Fleet = "fleet"
)

// Scenarios lists the scenario names in the order they are documented.
var Scenarios = []string{Herd, Outage, Restart, RateLimit, Callback, Fleet}

// The fixed herd of the specification: start times uniform in [0 s, 1 s),
// job durations log-normal with this median and σ, this deadline.
const (
	StartSpread    = time.Second
	MedianDuration = 60 * time.Second
	DurationSigma  = 1.0
	Deadline       = 40 * time.Minute
	// The callback scenario's delay from a job's end to its callback:
	// log-normal with this median and σ (so p99 ≈ 10 s).
	CallbackMedian = time.Second
	CallbackSigma  = 1.0
)

// Config is one simulation run. Every field is explicit so that a run can
// be repeated exactly; DefaultConfig fills them for a named scenario.
type Config struct {
	Scenario string
	N        int
	Seed     uint64
	// Strategies to run, by name; empty means the six of the
	// specification (Baselines plus "pollwarden").
	Strategies []string

	// Outage: during [OutageStart, OutageEnd) every status request is
	// answered 503 with Retry-After: OutageRetryAfter seconds.
	OutageStart, OutageEnd time.Duration
	OutageRetryAfter       int

	// Restart: the controller is down during [DownStart, DownEnd): nothing
	// is sent; at DownEnd every operation whose next request fell inside
	// the window is overdue. Both are whole seconds.
	DownStart, DownEnd time.Duration

	// RateLimit, when > 0: the provider admits at most this many status
	// requests per second (fixed 1 s windows, counting admitted requests)
	// and answers the rest 429, with Retry-After: RateLimitRetryAfter
	// seconds when that is > 0.
	RateLimit           int
	RateLimitRetryAfter int

	// Callbacks: the provider also sends a completion callback after each
	// job's end (CallbackMedian, CallbackSigma), each lost with
	// probability CallbackLoss. Only the pollwarden strategies receive
	// them; the baselines ignore callbacks.
	Callbacks    bool
	CallbackLoss float64

	// Fleet: the provider admits at most QuotaRequests status requests in
	// each fixed window of QuotaPer (counted from 0) and answers the rest
	// 429 with a Retry-After to the window's end; the operations belong
	// to Processes processes (FleetShares), each its own owner, all
	// under one credential.
	QuotaRequests int
	QuotaPer      time.Duration
	Processes     int

	// BurstFrom is the first 1 s bin burstiness looks at, BurstBins how
	// many bins (0: to the end of the run). BurstFloor leaves out bins whose
	// 30 s moving average is below it (requests per second): there Poisson
	// noise alone moves one bin by more than a third.
	BurstFrom, BurstBins int
	BurstFloor           float64
}

// DefaultBurstFloor is the moving average (requests per second) under
// which a bin is too noisy to say anything about bursts: at 100 per
// second one standard deviation of a Poisson count is 10 %.
const DefaultBurstFloor = 100

// DefaultConfig returns the documented parameters of a scenario.
func DefaultConfig(scenario string, n int, seed uint64) (Config, error) {
	if n < 1 || n > 10_000_000 {
		return Config{}, fmt.Errorf("n must be between 1 and 10000000, got %d", n)
	}
	c := Config{Scenario: scenario, N: n, Seed: seed, BurstFrom: 30, BurstFloor: DefaultBurstFloor}
	switch scenario {
	case Herd:
	case Outage:
		// Two minutes in the middle of the herd's busy phase: half the
		// jobs are still running at 60 s.
		c.OutageStart, c.OutageEnd, c.OutageRetryAfter = 60*time.Second, 180*time.Second, 120
	case Restart:
		// 150 s down: longer than any strategy's longest delay (k8s-backoff
		// sleeps up to 132 s), so every waiting operation is overdue.
		c.DownStart, c.DownEnd = 60*time.Second, 210*time.Second
		c.BurstFrom, c.BurstBins = 210, 60
	case RateLimit:
		// 2 % of the herd per second, at least 10/s: the start and the first
		// waves are far above it, the tail well below.
		c.RateLimit = max(10, n/50)
	case Callback:
		c.Callbacks = true
	case Fleet:
		// One credential whose quota is N requests a minute, the herd's
		// first round, shared by four processes of uneven size; an outage
		// of four minutes (bare 503s, no Retry-After) while a quarter of
		// the jobs still run.
		c.QuotaRequests, c.QuotaPer, c.Processes = n, time.Minute, len(FleetShares)
		c.OutageStart, c.OutageEnd = 120*time.Second, 360*time.Second
		c.Strategies = slices.Clone(FleetStrategies)
	default:
		return Config{}, fmt.Errorf("unknown scenario %q (want one of %s)", scenario, strings.Join(Scenarios, ", "))
	}
	return c, nil
}

// population is the set of jobs every strategy polls: the same for all of
// them in one run.
type population struct {
	start, end, deadline []int64 // virtual nanoseconds
	// callback is when each job's callback arrives, -1 when it is lost;
	// nil without callbacks.
	callback []int64
}

// newPopulation draws the herd: start uniform in [0, 1 s), duration
// log-normal (median 60 s, σ 1.0), deadline 40 min after start.
func newPopulation(n int, seed uint64) *population {
	r := rand.New(rand.NewPCG(seed, 0x706f70756c617465)) // "populate"
	p := &population{start: make([]int64, n), end: make([]int64, n), deadline: make([]int64, n)}
	med := MedianDuration.Seconds()
	for k := range n {
		s := int64(r.Float64() * float64(StartSpread))
		d := med * math.Exp(DurationSigma*r.NormFloat64())
		p.start[k] = s
		p.end[k] = s + int64(d*float64(time.Second))
		p.deadline[k] = s + int64(Deadline)
	}
	return p
}

// withCallbacks draws each job's callback from its own stream, so the
// jobs are the herd's for the same seed whatever the loss: arrival at the
// job's end plus a log-normal delay, lost with probability loss.
func (p *population) withCallbacks(seed uint64, loss float64) {
	r := rand.New(rand.NewPCG(seed, 0x63616c6c6261636b)) // "callback"
	p.callback = make([]int64, len(p.end))
	med := CallbackMedian.Seconds()
	for k := range p.end {
		d := med * math.Exp(CallbackSigma*r.NormFloat64())
		if r.Float64() < loss {
			p.callback[k] = -1
			continue
		}
		p.callback[k] = p.end[k] + int64(d*float64(time.Second))
	}
}

// rng is a per-operation random source: a PCG kept inline so that a
// million of them cost 16 bytes each and no allocation. It satisfies
// policy.Rand.
type rng struct{ p rand.PCG }

func newRNG(seed uint64, stream string, k int) rng {
	h := uint64(14695981039346656037) // FNV-1a of the stream name
	for i := 0; i < len(stream); i++ {
		h = (h ^ uint64(stream[i])) * 1099511628211
	}
	var r rng
	r.p.Seed(seed^h, uint64(k)*0x9e3779b97f4a7c15+h)
	return r
}

// Float64 returns a uniform value in [0, 1), as math/rand/v2 does.
func (r *rng) Float64() float64 { return float64(r.p.Uint64()<<11>>11) / (1 << 53) }
