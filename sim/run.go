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
}

// Params echoes the scenario's parameters so a report explains itself.
type Params struct {
	DeadlineS          float64 `json:"deadline_s"`
	OutageS            []int   `json:"outage_s,omitempty"`
	OutageRetryAfterS  int     `json:"outage_retry_after_s,omitempty"`
	DownS              []int   `json:"controller_down_s,omitempty"`
	RateLimitPerS      int     `json:"rate_limit_per_s,omitempty"`
	RateLimitRetryAftS int     `json:"rate_limit_retry_after_s,omitempty"`
	BurstFromS         int     `json:"burstiness_from_s"`
	BurstBins          int     `json:"burstiness_bins,omitempty"`
	BurstFloor         float64 `json:"burstiness_floor_per_s"`
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
	if c.DownEnd > c.DownStart {
		p.DownS = []int{int(c.DownStart.Seconds()), int(c.DownEnd.Seconds())}
	}
	return p
}

// Known reports whether name is a strategy this package can run.
func Known(name string) bool {
	_, ok := baselineFuncs[name]
	_, exp := experiments[name]
	return ok || exp || name == Pollwarden
}

func newStrategy(name string, cfg *Config) (strategy, error) {
	_, isExp := experiments[name]
	switch {
	case name == Pollwarden || isExp:
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
	return run(cfg, newPopulation(cfg.N, cfg.Seed))
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
	rep := &Report{Scenario: cfg.Scenario, N: cfg.N, Seed: cfg.Seed, Strategies: results, Params: paramsOf(&cfg)}
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
