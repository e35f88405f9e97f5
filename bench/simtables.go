package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pollwarden/pollwarden/sim"
	"github.com/pollwarden/pollwarden/sim/simplot"
)

// simTables runs the four scenarios over several seeds in process (the
// same code as `pollwarden sim`), prints seed 1's table per scenario and
// counts, per target, on how many seeds the real policy met it.
func simTables(_ context.Context, c *config, w *bytes.Buffer) error {
	sizes, seeds := []int{10000}, 3
	if c.full {
		sizes, seeds = []int{10000, 100000}, 8
	}
	fmt.Fprintf(w, "### Simulation (`pollwarden sim`)\n\n")
	fmt.Fprintf(w, "Seed 1's table per scenario, then the issue's targets for the `pollwarden` row over seeds 1–%d. "+
		"Simulated figures are exact for their seed and do not depend on the machine. "+
		"Reproduce one table with `pollwarden sim --scenario SCENARIO --n N --seed S`.\n\n", seeds)
	type tally struct {
		met, total int
		lo, hi     float64
		notes      map[string]bool
	}
	for _, n := range sizes {
		tallies := map[string]*tally{}
		var names []string
		for _, sc := range sim.Scenarios {
			for seed := 1; seed <= seeds; seed++ {
				cfg, err := sim.DefaultConfig(sc, n, uint64(seed))
				if err != nil {
					return err
				}
				rep, err := sim.Run(cfg)
				if err != nil {
					return err
				}
				if seed == 1 {
					writeSimTable(w, rep)
					if err := plot(c, w, rep); err != nil {
						return err
					}
				}
				for _, t := range rep.Targets {
					if t.Strategy != sim.Pollwarden {
						continue
					}
					key := sc + " · " + t.Name
					tl := tallies[key]
					if tl == nil {
						tl = &tally{lo: t.Value, hi: t.Value, notes: map[string]bool{}}
						tallies[key] = tl
						names = append(names, key)
					}
					tl.total++
					if t.Met {
						tl.met++
					}
					tl.lo, tl.hi = min(tl.lo, t.Value), max(tl.hi, t.Value)
					if t.Note != "" {
						tl.notes[t.Note] = true
					}
				}
			}
		}
		fmt.Fprintf(w, "Targets, n = %d, seeds 1–%d:\n\n| scenario · target | values | met on |\n|---|---|---|\n", n, seeds)
		for _, k := range names {
			tl := tallies[k]
			var notes []string
			for n := range tl.notes {
				notes = append(notes, n)
			}
			sort.Strings(notes)
			v := fmt.Sprintf("%.3f–%.3f", tl.lo, tl.hi)
			if len(notes) > 0 {
				v += " (" + strings.Join(notes, "; ") + ")"
			}
			fmt.Fprintf(w, "| %s | %s | %d of %d seeds |\n", k, v, tl.met, tl.total)
		}
		fmt.Fprintln(w)
	}
	return simIssueTargets(c)
}

func writeSimTable(w *bytes.Buffer, r *sim.Report) {
	fmt.Fprintf(w, "**%s, n = %d, seed %d**\n\n", r.Scenario, r.N, r.Seed)
	fmt.Fprintf(w, "| strategy | req/job | lag p50 (s) | lag p99 (s) | peak/s | burstiness | Retry-After viol. | stopped by limit |\n|---|---|---|---|---|---|---|---|\n")
	for _, s := range r.Strategies {
		name := s.Name
		if name == sim.Pollwarden {
			name = "**" + name + "**"
		}
		b := "n/a"
		if s.BurstinessBins > 0 {
			b = fmt.Sprintf("%.2f (at %d s)", s.Burstiness, s.BurstinessAt)
		}
		fmt.Fprintf(w, "| %s | %.2f | %.1f | %.1f | %d | %s | %d | %.2f %% |\n",
			name, s.RequestsPerJob, s.LagP50, s.LagP99, s.PeakRate, b, s.RetryAfterViolations, 100*s.StoppedByLimit)
	}
	fmt.Fprintln(w)
}

// plot draws seed 1's request rate over time per strategy beside the
// output file (docs/plots/SCENARIO-N.svg) and links it from the section;
// with -out - nothing is drawn, there is no file to sit beside.
func plot(c *config, w *bytes.Buffer, r *sim.Report) error {
	if c.out == "-" {
		return nil
	}
	name := fmt.Sprintf("%s-%d.svg", r.Scenario, r.N)
	dir := filepath.Join(filepath.Dir(c.out), "plots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := simplot.Write(r, &buf, "svg"); err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(w, "![%s, n = %d: requests per second over time, per strategy](plots/%s)\n\n"+
		"(`go run -tags plot ./cmd/pollwarden sim --scenario %s --n %d --seed %d --plot %s`)\n\n", r.Scenario, r.N, name, r.Scenario, r.N, r.Seed, name)
	return nil
}
