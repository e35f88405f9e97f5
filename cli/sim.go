package cli

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pollwarden/pollwarden/sim"
	"github.com/spf13/cobra"
)

// simMaxN bounds --n: a run holds every operation's record in memory.
const simMaxN = 1_000_000

// simBrooker is the extra --scenario value that runs the harness check
// against Brooker's contention table instead of a polling scenario.
const simBrooker = "brooker"

func simCmd(env Env) *cobra.Command {
	var (
		scenario, plotFile, strategies string
		n, runs                        int
		seed                           uint64
		callbackLoss                   float64
		asJSON, experimental           bool
	)
	c := &cobra.Command{
		Use:   "sim",
		Short: "Simulate many operations polled by the real policy and by baseline schedules, on a virtual clock",
		Long: `sim runs a discrete-event simulation of N operations on a virtual clock. The
"pollwarden" strategy is the project's own decision core (policy.Gate,
CountRequest, Decide); the baselines follow the formulas in docs/sim.md. Every
strategy polls its own copy of a simulated provider. Nothing is sent over a
network and no wall clock is read: the same --seed gives the same numbers.

Scenarios: herd (N jobs start within one second; log-normal durations, median
60 s, sigma 1.0; deadline 40 min), outage (503 with Retry-After: 120 during
[60 s, 180 s)), restart (the controller is down during [60 s, 210 s)),
rate-limit (the provider answers 429 above max(10, N/50) requests per second),
callback (the herd's jobs, and the provider also calls back after each job's
end, log-normal delay median 1 s, sigma 1, each callback lost with probability
--callback-loss; only pollwarden acts on them), fleet (one credential's quota
of N requests a minute shared by four processes of uneven size, and bare 503s
during [120 s, 360 s): the policy alone, with a per-process ceiling of the
quota divided by four, and with the shared quota and incidents), and brooker
(the harness check against Brooker's contention table).

See docs/sim.md for the model, the formulas and the counting rules.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var format string
			if plotFile != "" {
				f, err := plotFormat(plotFile)
				if err != nil {
					return usage(err)
				}
				format = f
			}
			if scenario == simBrooker {
				if runs < 1 || runs > 10_000 {
					return usage(fmt.Errorf("--runs must be between 1 and 10000, got %d", runs))
				}
				if plotFile != "" {
					return usage(fmt.Errorf("--plot is not available for --scenario brooker"))
				}
				return env.simBrooker(runs, seed, asJSON)
			}
			if n < 1 || n > simMaxN {
				return usage(fmt.Errorf("--n must be between 1 and %d, got %d", simMaxN, n))
			}
			cfg, err := sim.DefaultConfig(scenario, n, seed)
			if err != nil {
				return usage(err)
			}
			if cmd.Flags().Changed("callback-loss") {
				if scenario != sim.Callback {
					return usage(fmt.Errorf("--callback-loss applies only to --scenario %s", sim.Callback))
				}
				if !(callbackLoss >= 0 && callbackLoss <= 1) {
					return usage(fmt.Errorf("--callback-loss must be a probability between 0 and 1, got %g", callbackLoss))
				}
				cfg.CallbackLoss = callbackLoss
			}
			if strategies != "" {
				cfg.Strategies = nil
				for _, s := range strings.Split(strategies, ",") {
					s = strings.TrimSpace(s)
					if !sim.Known(s) {
						return usage(fmt.Errorf("--strategies: unknown strategy %q (want %s, %s or an experimental one: %s)",
							s, strings.Join(sim.Standard, ", "), sim.Proposed, strings.Join(sim.Experiments(), ", ")))
					}
					cfg.Strategies = append(cfg.Strategies, s)
				}
			} else if len(cfg.Strategies) == 0 {
				cfg.Strategies = slices.Clone(sim.Standard)
			}
			if experimental && !slices.Contains(cfg.Strategies, sim.Proposed) {
				cfg.Strategies = append(cfg.Strategies, sim.Proposed)
			}
			start := time.Now()
			rep, err := sim.Run(cfg)
			if err != nil {
				return usage(err)
			}
			wall := time.Since(start)
			if plotFile != "" {
				var buf bytes.Buffer
				if err := writePlot(rep, &buf, format); err != nil {
					return err
				}
				if err := os.WriteFile(plotFile, buf.Bytes(), 0o644); err != nil {
					return err
				}
			}
			if asJSON {
				return writeJSON(env.Stdout, rep)
			}
			printSim(env.Stdout, rep)
			fmt.Fprintf(env.Stdout, "simulated in %.2f s of wall time\n", wall.Seconds())
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&scenario, "scenario", sim.Herd, "herd, outage, restart, rate-limit, callback, fleet or brooker")
	f.Float64Var(&callbackLoss, "callback-loss", 0, "callback only: the probability that each completion callback is lost")
	f.IntVar(&n, "n", 10_000, "number of operations")
	f.Uint64Var(&seed, "seed", 1, "random seed; the same seed gives the same numbers")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&plotFile, "plot", "", "also draw the request rate over time to FILE.svg or FILE.png (a binary built with -tags plot)")
	f.StringVar(&strategies, "strategies", "", "comma-separated strategies to run (default: pollwarden and the five baselines; for fleet, its three)")
	f.BoolVar(&experimental, "experimental", false, "also run "+sim.Proposed+", the policy plus a change it has not adopted (jitter on top of Retry-After)")
	f.IntVar(&runs, "runs", 100, "runs per cell (brooker only)")
	return c
}

// printSim writes the readable table of a report and its targets.
func printSim(w io.Writer, rep *sim.Report) {
	p := rep.Params
	fmt.Fprintf(w, "scenario %s · n %d · seed %d · deadline %s", rep.Scenario, rep.N, rep.Seed, time.Duration(p.DeadlineS*float64(time.Second)))
	if len(p.OutageS) == 2 && p.OutageRetryAfterS > 0 {
		fmt.Fprintf(w, " · provider answers 503 with Retry-After: %d during [%d s, %d s)", p.OutageRetryAfterS, p.OutageS[0], p.OutageS[1])
	} else if len(p.OutageS) == 2 {
		fmt.Fprintf(w, " · provider answers 503 without Retry-After during [%d s, %d s)", p.OutageS[0], p.OutageS[1])
	}
	if p.QuotaRequests > 0 {
		fmt.Fprintf(w, " · provider quota %d requests per %d s (429 with Retry-After to the window's end) · %d processes", p.QuotaRequests, p.QuotaPerS, p.Processes)
	}
	if len(p.DownS) == 2 {
		fmt.Fprintf(w, " · controller down during [%d s, %d s)", p.DownS[0], p.DownS[1])
	}
	if p.RateLimitPerS > 0 {
		fmt.Fprintf(w, " · provider answers 429 above %d requests/s", p.RateLimitPerS)
	}
	if p.CallbackLoss != nil {
		fmt.Fprintf(w, " · provider calls back %g s (median) after each job's end, %g%% of callbacks lost", p.CallbackMedianS, 100**p.CallbackLoss)
	}
	fmt.Fprintln(w)
	burst := fmt.Sprintf("burstiness (≥ %d s)", p.BurstFromS)
	if p.BurstBins > 0 {
		burst = fmt.Sprintf("burstiness [%d s, %d s)", p.BurstFromS, p.BurstFromS+p.BurstBins)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "strategy\treq/job\tlag p50 (s)\tlag p99 (s)\tpeak/s\tmean/s\t%s\tRetry-After viol.\t503\t429\tstopped by limit\t\n", burst)
	for _, s := range rep.Strategies {
		b := "n/a"
		if s.BurstinessBins > 0 {
			b = fmt.Sprintf("%.2f @%d s", s.Burstiness, s.BurstinessAt)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f\t%.1f\t%d\t%.1f\t%s\t%d\t%d\t%d\t%s\t\n", s.Name, s.RequestsPerJob, s.LagP50, s.LagP99,
			s.PeakRate, s.MeanRate, b, s.RetryAfterViolations, s.Answers503, s.Answers429, percent(s.StoppedByLimit))
	}
	tw.Flush()
	if p.QuotaRequests > 0 {
		printFleet(w, rep)
	}
	if wo := rep.WithoutCallbacks; wo != nil {
		fmt.Fprintf(w, "pollwarden deaf to callbacks, same jobs: %.2f req/job, lag p50 %.1f s, p99 %.1f s\n", wo.RequestsPerJob, wo.LagP50, wo.LagP99)
	}
	fmt.Fprintf(w, "burstiness: a 1 s bin's count over its 30 s centred moving average, bins whose average is at least %g/s\n", p.BurstFloor)
	if len(rep.Targets) == 0 {
		return
	}
	fmt.Fprintln(w, "targets:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, t := range rep.Targets {
		verdict := "met"
		switch {
		case t.NotMeasurable:
			verdict = "n/a"
		case !t.Met:
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%g\t≤ %g\t%s\n", verdict, t.Strategy, t.Name, t.Value, t.Limit, t.Note)
	}
	tw.Flush()
}

// printFleet writes the fleet scenario's own measures.
func printFleet(w io.Writer, rep *sim.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tover quota\t429s\tnotifications\tof the outage\tincidents\t")
	for _, s := range rep.Strategies {
		if s.OverQuota == nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", s.Name, *s.OverQuota, s.Answers429, *s.Notifications, *s.OutageNotifications, *s.Incidents)
	}
	tw.Flush()
	fmt.Fprintln(w, "over quota: requests the provider saw beyond its quota in a sliding window of its length; notifications: escalations and incidents opened, each one")
}

func percent(v float64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%.2f%%", 100*v)
}

// brookerCell is one row of the harness check.
type brookerCell struct {
	sim.BrookerResult
	RefCalls  float64 `json:"ref_calls,omitempty"`
	RefTimeMs float64 `json:"ref_time_ms,omitempty"`
	CallsDev  float64 `json:"calls_deviation,omitempty"`
	TimeDev   float64 `json:"time_deviation,omitempty"`
}

// simBrooker runs the contention model for N = 50, 100, 190 and compares
// the controls with the reference table.
func (env Env) simBrooker(runs int, seed uint64, asJSON bool) error {
	var cells []brookerCell
	for _, clients := range []int{50, 100, 190} {
		for _, v := range sim.BrookerVariants {
			r, err := sim.Brooker(v, clients, runs, seed)
			if err != nil {
				return err
			}
			c := brookerCell{BrookerResult: r}
			if ref, ok := sim.BrookerReference[clients][v]; ok {
				c.RefCalls, c.RefTimeMs = ref[0], ref[1]
				c.CallsDev, c.TimeDev = round4(r.Calls/ref[0]-1), round4(r.TimeMs/ref[1]-1)
			}
			cells = append(cells, c)
		}
	}
	if asJSON {
		return writeJSON(env.Stdout, map[string]any{"scenario": simBrooker, "runs": runs, "seed": seed, "cells": cells})
	}
	fmt.Fprintf(env.Stdout, "Brooker's OCC contention model · %d runs per cell · seed %d · reference: Brooker's published table, docs/sim.md\n", runs, seed)
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tvariant\tcalls\treference\tdeviation\ttime (ms)\treference\tdeviation\t")
	for _, c := range cells {
		if c.RefCalls == 0 {
			fmt.Fprintf(tw, "%d\t%s\t%.0f\t\t\t%.0f\t\t\t\n", c.Clients, c.Variant, c.Calls, c.TimeMs)
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.0f\t%+.1f%%\t%.0f\t%.0f\t%+.1f%%\t\n", c.Clients, c.Variant, c.Calls, c.RefCalls,
			100*c.CallsDev, c.TimeMs, c.RefTimeMs, 100*c.TimeDev)
	}
	return tw.Flush()
}

func round4(v float64) float64 { return math.Round(v*10000) / 10000 }
