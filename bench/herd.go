package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pollwarden/pollwarden/sim"
)

// herdProvider is the loopback provider of the daemon herd: job k runs
// from its registration until start+duration, then answers succeeded. It
// logs every status request.
type herdProvider struct {
	mu       sync.Mutex
	start    []time.Time
	end      []time.Time
	requests [][]time.Time // per job: request times
	seen     []time.Time   // per job: the first request that observed the end
	observed atomic.Int64
}

func (p *herdProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	k, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/v1/jobs/"))
	if err != nil || k < 0 || k >= len(p.end) {
		http.NotFound(w, r)
		return
	}
	p.mu.Lock()
	p.requests[k] = append(p.requests[k], now)
	done := !now.Before(p.end[k])
	if done && p.seen[k].IsZero() {
		p.seen[k] = now
		p.observed.Add(1)
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if done {
		fmt.Fprintf(w, `{"state":"succeeded","result":{"url":"https://results.example.com/%d.csv"}}`, k)
		return
	}
	fmt.Fprint(w, `{"state":"running"}`)
}

// herdContract is the simulation's contract (sim.Contract) with every
// duration multiplied by scale, against the loopback provider.
func herdContract(providerAddr string, scale float64) string {
	d := func(v time.Duration) string { return time.Duration(float64(v) * scale).String() }
	return fmt.Sprintf(`version: 1
name: bench-herd
status:
  url: "http://%s/v1/jobs/{job_id}"
  timeout: 10s
state: {path: state, pending: [running], success: [succeeded]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: %s, max: %s}
limits: {deadline: %s, max_status_requests: 100000, max_transport_failures: 3, max_rate_limited: 3}
`, providerAddr, d(5*time.Second), d(120*time.Second), d(40*time.Minute))
}

// daemonHerd runs the herd against a real `pollwarden serve`: N
// operations registered through the API, log-normal job durations
// (median 60 s, σ = 1), every duration of the scenario scaled by scale
// so that the run fits in minutes. The provider's request log is reduced
// to the simulation's metrics, in simulated seconds (real ÷ scale), and
// compared with `pollwarden sim`'s pollwarden row for the same N.
func daemonHerd(ctx context.Context, c *config, w *bytes.Buffer) error {
	n, scale := 500, 0.1
	if c.full {
		n, scale = 10000, 0.5
	}
	fmt.Fprintf(w, "### The herd against the real daemon\n\n")
	fmt.Fprintf(w, "`pollwarden serve` (SQLite store, default settings: synchronous=FULL, concurrency 32) and a loopback provider in the bench process. "+
		"%d operations registered through `POST /v1/operations` by 8 clients; job k starts when its registration is sent and lasts 60 s·exp(Z), Z standard normal (seed 1). "+
		"Every duration of the scenario (backoff 5 s/120 s, deadline 40 min, the jobs) is scaled by %.2g so the run takes minutes; "+
		"figures below are converted back to simulated seconds (real ÷ %.2g). Burstiness uses 1-simulated-second bins, as the simulation does.\n\n", n, scale, scale)

	dir := filepath.Join(c.tmp, "herd")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	prov := &herdProvider{start: make([]time.Time, n), end: make([]time.Time, n), requests: make([][]time.Time, n), seen: make([]time.Time, n)}
	srv := &http.Server{Handler: prov}
	go srv.Serve(ln)
	defer srv.Close()

	d, _, err := startDaemon(ctx, c, dir, filepath.Join(dir, "herd.db"), herdContract(ln.Addr().String(), scale))
	if err != nil {
		return err
	}
	defer d.stop()

	r := rand.New(rand.NewPCG(1, 0x5eed))
	dur := make([]time.Duration, n)
	for k := range dur {
		dur[k] = time.Duration(60 * math.Exp(r.NormFloat64()) * scale * float64(time.Second))
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	regStart := time.Now()
	var wg sync.WaitGroup
	var regErr atomic.Value
	next := atomic.Int64{}
	for range 8 {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				now := time.Now()
				prov.mu.Lock()
				prov.start[k], prov.end[k] = now, now.Add(dur[k])
				prov.mu.Unlock()
				code, body, err := d.post(client, "/v1/operations", map[string]any{
					"operation_id": "herd-" + strconv.Itoa(k), "contract": "bench-herd", "job_id": strconv.Itoa(k)})
				if err == nil && code != 201 && code != 200 {
					err = fmt.Errorf("register %d: HTTP %d %s", k, code, body)
				}
				if err != nil {
					regErr.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if e, _ := regErr.Load().(error); e != nil {
		return e
	}
	regTook := time.Since(regStart)
	logf("herd: %d operations registered in %s", n, regTook.Round(time.Millisecond))
	deadline := time.Duration(float64(40*time.Minute) * scale)
	lastEnd := regStart.Add(regTook + deadline + 5*time.Second)
	for int(prov.observed.Load()) < n && time.Now().Before(lastEnd) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	time.Sleep(time.Duration(float64(5*time.Second) * scale)) // let late answers land
	prov.mu.Lock()
	defer prov.mu.Unlock()

	// Reduce the log as the simulation counts.
	var reqs int
	var lags []float64
	var all []time.Time
	for k := range n {
		for _, t := range prov.requests[k] {
			if !prov.seen[k].IsZero() && t.After(prov.seen[k]) {
				continue
			}
			reqs++
			all = append(all, t)
		}
		if !prov.seen[k].IsZero() {
			lags = append(lags, prov.seen[k].Sub(prov.end[k]).Seconds()/scale)
		}
	}
	slices.Sort(lags)
	var first []float64
	for k := range n {
		if len(prov.requests[k]) > 0 {
			first = append(first, prov.requests[k][0].Sub(prov.start[k]).Seconds())
		}
	}
	slices.Sort(first)
	reqPerJob := float64(reqs) / float64(n)
	p50, p99 := nearestRank(lags, 0.5), nearestRank(lags, 0.99)
	burst, at, bins := burstiness(all, regStart, time.Duration(scale*float64(time.Second)))

	cfg, err := sim.DefaultConfig(sim.Herd, n, 1)
	if err != nil {
		return err
	}
	rep, err := sim.Run(cfg)
	if err != nil {
		return err
	}
	pw, _ := rep.Get(sim.Pollwarden)
	sm, _ := rep.Get(sim.SmithyWaiter)
	fx, _ := rep.Get(sim.Fixed10s)
	fmt.Fprintf(w, "Registration took %s (%.1f simulated s; the simulation starts its herd within 1 s). %d of %d job ends observed.\n\n",
		regTook.Round(time.Millisecond), regTook.Seconds()/scale, len(lags), n)
	fmt.Fprintf(w, "| | req/job | lag p50 (s) | lag p99 (s) | burstiness | req/job ÷ smithy | lag p99 ÷ smithy | req/job ÷ fixed-10s |\n|---|---|---|---|---|---|---|---|\n")
	bs := "n/a (under the 100/s floor)"
	if bins > 0 {
		bs = fmt.Sprintf("%.2f (at %d s)", burst, at)
	}
	fmt.Fprintf(w, "| daemon | %.2f | %.1f | %.1f | %s | %.3f | %.3f | %.3f |\n", reqPerJob, p50, p99, bs,
		reqPerJob/sm.RequestsPerJob, p99/sm.LagP99, reqPerJob/fx.RequestsPerJob)
	sb := "n/a"
	if pw.BurstinessBins > 0 {
		sb = fmt.Sprintf("%.2f (at %d s)", pw.Burstiness, pw.BurstinessAt)
	}
	fmt.Fprintf(w, "| simulation, pollwarden | %.2f | %.1f | %.1f | %s | %.3f | %.3f | %.3f |\n\n", pw.RequestsPerJob, pw.LagP50, pw.LagP99, sb,
		pw.RequestsPerJob/sm.RequestsPerJob, pw.LagP99/sm.LagP99, pw.RequestsPerJob/fx.RequestsPerJob)
	dev := func(a, b float64) string {
		x := a/b - 1
		verdict := "within 15 %"
		if math.Abs(x) > 0.15 {
			verdict = "**over 15 %: a scheduler bug to find**"
		}
		return fmt.Sprintf("%+.1f %% (%s)", 100*x, verdict)
	}
	fmt.Fprintf(w, "Deviation of the daemon's ratios from the simulation's (the baselines' figures are the simulation's in both): requests per job %s; lag p99 %s; lag p50 %s.\n\n",
		dev(reqPerJob, pw.RequestsPerJob), dev(p99, pw.LagP99), dev(p50, pw.LagP50))
	fmt.Fprintf(w, "The first status request of an operation left %.3f s (p50) / %.3f s (p99) of real time after its registration was sent, i.e. %.1f / %.1f simulated s: "+
		"the simulation polls at the start exactly, so every real-time delay of the daemon (the API's write, the scheduler's pick-up, a step's two writes) is magnified 1/scale-fold here.\n\n",
		nearestRank(first, 0.5), nearestRank(first, 0.99), nearestRank(first, 0.5)/scale, nearestRank(first, 0.99)/scale)
	if m, err := d.metrics(); err == nil {
		q, cnt := histogramQuantile(m, "pollwarden_scheduling_lateness_seconds", 0.99)
		if cnt > 0 {
			fmt.Fprintf(w, "The daemon's own scheduling lateness (its `pollwarden_scheduling_lateness_seconds` histogram, %.0f steps): p99 ≤ %g s real.\n\n", cnt, q)
		}
	}
	return nil
}

func nearestRank(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// burstiness is the simulation's measure over request times: bins of
// width bin from origin; the largest ratio of a bin's count to the mean
// of the bins [b−15, b+15) that exist (as sim's burstiness), from bin 30
// on, over bins whose mean is at least 100.
func burstiness(times []time.Time, origin time.Time, bin time.Duration) (float64, int, int) {
	var counts []float64
	for _, t := range times {
		b := int(t.Sub(origin) / bin)
		if b < 0 {
			continue
		}
		for b >= len(counts) {
			counts = append(counts, 0)
		}
		counts[b]++
	}
	best, at, used := 0.0, 0, 0
	for b := 30; b < len(counts); b++ {
		sum, k := 0.0, 0
		for i := max(0, b-15); i < min(len(counts), b+15); i++ {
			sum += counts[i]
			k++
		}
		mean := sum / float64(k)
		if mean < 100 {
			continue
		}
		used++
		if r := counts[b] / mean; r > best {
			best, at = r, b
		}
	}
	return best, at, used
}
