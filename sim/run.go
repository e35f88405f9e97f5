package sim

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Report is one run: every strategy against the same population.
type Report struct {
	Scenario   string   `json:"scenario"`
	N          int      `json:"n"`
	Seed       uint64   `json:"seed"`
	Strategies []Result `json:"strategies"`
	Targets    []Target `json:"targets,omitempty"`
	Params     Params   `json:"params"`
	// WithoutCallbacks is the pollwarden strategy on the same jobs with
	// callbacks ignored (callback scenario only): what "no worse than
	// without callbacks" compares with. It is the herd's pollwarden row.
	WithoutCallbacks *Result `json:"pollwarden_without_callbacks,omitempty"`
}

// Params echoes the scenario's parameters so a report explains itself.
type Params struct {
	DeadlineS          float64  `json:"deadline_s"`
	OutageS            []int    `json:"outage_s,omitempty"`
	OutageRetryAfterS  int      `json:"outage_retry_after_s,omitempty"`
	DownS              []int    `json:"controller_down_s,omitempty"`
	RateLimitPerS      int      `json:"rate_limit_per_s,omitempty"`
	RateLimitRetryAftS int      `json:"rate_limit_retry_after_s,omitempty"`
	BurstFromS         int      `json:"burstiness_from_s"`
	BurstBins          int      `json:"burstiness_bins,omitempty"`
	BurstFloor         float64  `json:"burstiness_floor_per_s"`
	CallbackLoss       *float64 `json:"callback_loss,omitempty"`
	CallbackMedianS    float64  `json:"callback_delay_median_s,omitempty"`
	CallbackSigma      float64  `json:"callback_delay_sigma,omitempty"`
	QuotaRequests      int      `json:"quota_requests,omitempty"`
	QuotaPerS          int      `json:"quota_per_s,omitempty"`
	Processes          int      `json:"processes,omitempty"`
}

func paramsOf(c *Config) Params {
	p := Params{
		DeadlineS: Deadline.Seconds(), RateLimitPerS: c.RateLimit, RateLimitRetryAftS: c.RateLimitRetryAfter,
		BurstFromS: c.BurstFrom, BurstBins: c.BurstBins, BurstFloor: c.BurstFloor,
	}
	if c.OutageEnd > c.OutageStart {
		p.OutageS = []int{int(c.OutageStart.Seconds()), int(c.OutageEnd.Seconds())}
		p.OutageRetryAfterS = c.OutageRetryAfter
	}
	if c.QuotaRequests > 0 {
		p.QuotaRequests, p.QuotaPerS, p.Processes = c.QuotaRequests, int(c.QuotaPer.Seconds()), c.Processes
	}
	if c.DownEnd > c.DownStart {
		p.DownS = []int{int(c.DownStart.Seconds()), int(c.DownEnd.Seconds())}
	}
	if c.Callbacks {
		loss := c.CallbackLoss
		p.CallbackLoss, p.CallbackMedianS, p.CallbackSigma = &loss, CallbackMedian.Seconds(), CallbackSigma
	}
	return p
}

// Known reports whether name is a strategy this package can run.
func Known(name string) bool {
	_, ok := baselineFuncs[name]
	_, exp := experiments[name]
	return ok || exp || name == Pollwarden || name == FleetCeiling || name == FleetShared || name == FleetOneOwner
}

func newStrategy(name string, cfg *Config) (strategy, error) {
	_, isExp := experiments[name]
	switch {
	case (name == FleetCeiling || name == FleetShared || name == FleetOneOwner) && cfg.QuotaRequests == 0:
		return nil, fmt.Errorf("strategy %q runs only in the %s scenario", name, Fleet)
	case name == Pollwarden || isExp || name == FleetCeiling || name == FleetShared || name == FleetOneOwner:
		return newRealPolicy(name, cfg)
	case baselineFuncs[name] != nil:
		return newBaseline(name, cfg.Seed), nil
	}
	return nil, fmt.Errorf("unknown strategy %q (want one of %s, %s)", name, strings.Join(Standard, ", "), Proposed)
}

// Run simulates cfg. Strategies run in parallel goroutines (at most
// GOMAXPROCS at a time); each has its own provider and random streams, so
// the report does not depend on how they are scheduled.
func Run(cfg Config) (*Report, error) {
	if cfg.N < 1 {
		return nil, fmt.Errorf("n must be at least 1, got %d", cfg.N)
	}
	if !(cfg.CallbackLoss >= 0 && cfg.CallbackLoss <= 1) {
		return nil, fmt.Errorf("the callback loss must be a probability between 0 and 1, got %g", cfg.CallbackLoss)
	}
	if cfg.CallbackLoss > 0 && !cfg.Callbacks {
		return nil, fmt.Errorf("a callback loss applies only to the %s scenario", Callback)
	}
	pop := newPopulation(cfg.N, cfg.Seed)
	if cfg.Callbacks {
		pop.withCallbacks(cfg.Seed, cfg.CallbackLoss)
	}
	return run(cfg, pop)
}

// run simulates cfg over a given population (tests build tiny ones by
// hand).
func run(cfg Config, pop *population) (*Report, error) {
	cfg.N = len(pop.start)
	names := cfg.Strategies
	if len(names) == 0 {
		names = Standard
	}
	strats := make([]strategy, len(names))
	for i, n := range names {
		if slices.Index(names, n) != i {
			return nil, fmt.Errorf("strategy %q listed twice", n)
		}
		s, err := newStrategy(n, &cfg)
		if err != nil {
			return nil, err
		}
		strats[i] = s
	}
	if cfg.Callbacks {
		// The reference: the same policy on the same jobs, deaf to callbacks.
		ref := cfg
		ref.Callbacks = false
		s, err := newRealPolicy(Pollwarden, &ref)
		if err != nil {
			return nil, err
		}
		strats = append(strats, s)
	}
	results := make([]Result, len(strats))
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i, s := range strats {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			e := newEngine(&cfg, pop)
			e.run(s)
			results[i] = e.result(s.name())
		}()
	}
	wg.Wait()
	rep := &Report{Scenario: cfg.Scenario, N: cfg.N, Seed: cfg.Seed, Strategies: results[:len(names)], Params: paramsOf(&cfg)}
	if cfg.Callbacks {
		rep.WithoutCallbacks = &results[len(names)]
	}
	rep.Targets = Targets(rep)
	return rep, nil
}

// Get returns the named strategy's result.
func (r *Report) Get(name string) (Result, bool) {
	for _, s := range r.Strategies {
		if s.Name == name {
			return s, true
		}
	}
	return Result{}, false
}
