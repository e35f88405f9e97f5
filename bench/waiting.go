package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/sqlite"
)

// waitingContract: a provider that is always running, backoff 5 s/120 s,
// deadline 24 h, a large budget.
func waitingContract(providerAddr string) string {
	return benchContract("bench-waiting", providerAddr, "24h", 100000)
}

// waitingOps measures one daemon holding many waiting operations: M
// records are written straight into a SQLite store (through the store's
// own create path, the same records the API makes), most of them due in
// an hour or more; a few (1 %, at most 5,000) fall due uniformly over the
// first minute after the daemon starts and keep polling a provider that
// always answers running. Reported: the time from exec to /healthz, the
// daemon's RSS after the measurement (per waiting operation), and the p99
// of the daemon's own scheduling lateness histogram.
func mkdirs(dir string) error { return os.MkdirAll(dir, 0o755) }

func waitingOps(ctx context.Context, c *config, w *bytes.Buffer) error {
	m, window := 20000, 60*time.Second
	if c.full {
		m = 1000000
	}
	due := min(m/100, 5000)
	fmt.Fprintf(w, "### Many waiting operations, one daemon\n\n")
	dir := filepath.Join(c.tmp, "waiting")
	prov, err := startProvider(answerRunning)
	if err != nil {
		return err
	}
	defer prov.close()
	yaml := waitingContract(prov.addr)
	ct, err := contract.Parse([]byte(yaml))
	if err != nil {
		return err
	}
	storePath := filepath.Join(dir, "waiting.db")
	if err := mkdirs(dir); err != nil {
		return err
	}
	st, err := sqlite.Open(ctx, storePath, sqlite.Options{Synchronous: "NORMAL"})
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(2, 0x5eed))
	buildStart := time.Now()
	create := func(k int, next time.Time) error {
		id := "w-" + strconv.Itoa(k)
		op, evs, err := policy.NewOperation(ct, policy.NewParams{ID: id, ProviderJobID: strconv.Itoa(k), Rand: r}, time.Now())
		if err != nil {
			return err
		}
		op.NextPollAt = next
		return st.OperationCreate(ctx, op, evs)
	}
	for k := range m - due {
		if err := create(k, time.Now().Add(time.Hour+time.Duration(r.Float64()*float64(time.Hour)))); err != nil {
			st.Close()
			return err
		}
		if k%100000 == 99999 {
			logf("waiting: %d records written", k+1)
		}
	}
	// The due ones last, so their times are relative to the daemon's start.
	t0 := time.Now().Add(10 * time.Second)
	for k := m - due; k < m; k++ {
		if err := create(k, t0.Add(time.Duration(r.Float64()*float64(window)))); err != nil {
			st.Close()
			return err
		}
	}
	buildTook := time.Since(buildStart)
	st.Close()
	// The same daemon on an empty store, for the fixed part of its RSS.
	baseRSS := int64(-1)
	if e, _, err := startDaemon(ctx, c, filepath.Join(dir, "empty"), filepath.Join(dir, "empty.db"), yaml); err == nil {
		time.Sleep(5 * time.Second)
		if v, err := e.rssKiB(); err == nil {
			baseRSS = v
		}
		e.stop()
	}
	d, startup, err := startDaemon(ctx, c, dir, storePath, yaml)
	if err != nil {
		return err
	}
	defer d.stop()
	time.Sleep(time.Until(t0.Add(window + 30*time.Second)))
	rss, rssErr := d.rssKiB()
	met, merr := d.metrics()
	fmt.Fprintf(w, "%d waiting operations (%d of them due over the first minute, then polling every 5–84 s against a loopback provider that always answers running; "+
		"the rest due in 1–2 h). Store written through the SQLite store's create path in %s (synchronous=NORMAL), then `pollwarden serve` started on it with its defaults. "+
		"Measured %s after the first operation fell due.\n\n", m, due, buildTook.Round(time.Second), (window + 30*time.Second))
	fmt.Fprintf(w, "| operations | start-up (exec → /healthz 200) | RSS after | RSS of the same daemon on an empty store | RSS per operation (difference ÷ operations) | scheduling lateness p99 | steps observed | provider requests |\n|---|---|---|---|---|---|---|---|\n")
	rssS, baseS, perOp := "?", "?", "?"
	if rssErr == nil {
		rssS = fmt.Sprintf("%.1f MiB", float64(rss)/1024)
		if baseRSS >= 0 {
			baseS = fmt.Sprintf("%.1f MiB", float64(baseRSS)/1024)
			perOp = fmt.Sprintf("%.0f B", float64(rss-baseRSS)*1024/float64(m))
		}
	}
	late, steps := "?", 0.0
	if merr == nil {
		q, cnt := histogramQuantile(met, "pollwarden_scheduling_lateness_seconds", 0.99)
		steps = cnt
		if cnt > 0 {
			late = fmt.Sprintf("≤ %g s", q)
		}
	}
	reqs := prov.served.Load()
	fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s (histogram bucket bound) | %.0f | %d |\n\n", m, startup.Round(time.Millisecond), rssS, baseS, perOp, late, steps, reqs)
	return nil
}

// randSource is a seeded random source for jitter factors.
func randSource(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }
