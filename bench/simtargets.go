package main

import (
	"fmt"
	"strconv"

	"github.com/pollwarden/pollwarden/sim"
)

// simIssueTargets runs the schedule and callback targets of the issue
// "Performance: near the limit of waiting" on the seeds it names (herd at
// n = 10,000 seeds 1–8 and n = 100,000 seeds 1–4; the callback scenario
// at n = 10,000 seeds 1–8 with every callback delivered and with every one
// lost) and records each as a target row. Simulated figures do not depend
// on the machine, so quick mode runs them too.
func simIssueTargets(c *config) error {
	type span struct{ lo, hi float64 }
	widen := func(s *span, v float64, first bool) {
		if first {
			*s = span{v, v}
			return
		}
		s.lo, s.hi = min(s.lo, v), max(s.hi, v)
	}
	for _, hs := range []struct{ n, seeds int }{{10000, 8}, {100000, 4}} {
		var burst, reqs, lag span
		met := true
		for seed := 1; seed <= hs.seeds; seed++ {
			rep, err := runSim(sim.Herd, hs.n, seed, nil)
			if err != nil {
				return err
			}
			v := simTargetValues(rep)
			widen(&burst, v["burstiness_after_30s"], seed == 1)
			widen(&reqs, v["requests_per_job_vs_smithy_waiter"], seed == 1)
			widen(&lag, v["lag_p99_vs_smithy_waiter"], seed == 1)
			met = met && v["burstiness_after_30s"] <= 1.5 && v["requests_per_job_vs_smithy_waiter"] <= 0.7 && v["lag_p99_vs_smithy_waiter"] <= 0.72
		}
		c.target(fmt.Sprintf("herd burstiness, n = %s, seeds 1–%d (keeping requests ≤ 0.7× and lag p99 ≤ 0.72× smithy-waiter's)", thousands(hs.n), hs.seeds),
			fmt.Sprintf("%.3f–%.3f; requests %.3f–%.3f×, lag p99 %.3f–%.3f×", burst.lo, burst.hi, reqs.lo, reqs.hi, lag.lo, lag.hi),
			"≤ 1.5 on every seed", met,
			fmt.Sprintf("pollwarden sim --scenario herd --n %d --seed S --json", hs.n))
	}
	for _, loss := range []float64{0, 1} {
		var a, b span
		met := true
		for seed := 1; seed <= 8; seed++ {
			l := loss
			rep, err := runSim(sim.Callback, 10000, seed, &l)
			if err != nil {
				return err
			}
			v := simTargetValues(rep)
			if loss == 0 {
				widen(&a, v["requests_per_job_every_callback_delivered"], seed == 1)
				widen(&b, v["lag_p99_s_every_callback_delivered"], seed == 1)
				met = met && v["requests_per_job_every_callback_delivered"] <= 2.2 && v["lag_p99_s_every_callback_delivered"] <= 2
			} else {
				widen(&a, v["requests_per_job_vs_without_callbacks"], seed == 1)
				widen(&b, v["lag_p99_vs_without_callbacks"], seed == 1)
				met = met && v["requests_per_job_vs_without_callbacks"] <= 1 && v["lag_p99_vs_without_callbacks"] <= 1
			}
		}
		if loss == 0 {
			c.target("callback scenario, every callback delivered, n = 10,000, seeds 1–8",
				fmt.Sprintf("%.2f–%.2f requests per job, lag p99 %.1f–%.1f s", a.lo, a.hi, b.lo, b.hi),
				"≤ 2.2 requests per job, lag p99 ≤ 2 s", met,
				"pollwarden sim --scenario callback --n 10000 --seed S --json")
		} else {
			c.target("callback scenario, all callbacks lost, n = 10,000, seeds 1–8",
				fmt.Sprintf("%.3f–%.3f× the requests, %.3f–%.3f× the lag p99 of the same policy deaf to callbacks", a.lo, a.hi, b.lo, b.hi),
				"no worse than without callbacks (≤ 1×)", met,
				"pollwarden sim --scenario callback --n 10000 --seed S --callback-loss 1 --json")
		}
	}
	return nil
}

func runSim(scenario string, n, seed int, loss *float64) (*sim.Report, error) {
	cfg, err := sim.DefaultConfig(scenario, n, uint64(seed))
	if err != nil {
		return nil, err
	}
	if loss != nil {
		cfg.CallbackLoss = *loss
	}
	return sim.Run(cfg)
}

// thousands writes n with commas every three digits, as the issue does.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// simTargetValues are the pollwarden row's target values of rep by name.
func simTargetValues(rep *sim.Report) map[string]float64 {
	v := map[string]float64{}
	for _, t := range rep.Targets {
		if t.Strategy == sim.Pollwarden {
			v[t.Name] = t.Value
		}
	}
	return v
}
