package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/postgres"
	"github.com/pollwarden/pollwarden/sqlite"
)

// burnContract: the provider answers succeeded to the first request.
func burnContract(providerAddr string) string {
	return benchContract("bench-burn", providerAddr, "1h", 10)
}

// benchContract is the contract of the bench's provider (succeeded ends a
// job, running keeps it going; backoff 5 s/120 s) with a name, a deadline
// and a request budget.
func benchContract(name, providerAddr, deadline string, maxRequests int) string {
	return fmt.Sprintf(`version: 1
name: %s
status:
  url: "http://%s/v1/jobs/{job_id}"
  timeout: 10s
state: {path: state, pending: [running], success: [succeeded]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: 5s, max: 120s}
limits: {deadline: %s, max_status_requests: %d, max_transport_failures: 3, max_rate_limited: 3}
`, name, providerAddr, deadline, maxRequests)
}

// riverCompare measures, in one run: the bare loopback HTTP ceiling (the
// provider asked by 32 clients, nothing stored); pollwarden's burn-down —
// N operations falling due at the same moment in front of running
// daemons, each finished by one status request — on SQLite and, with
// POLLWARDEN_TEST_PG, on PostgreSQL with one, two and three replicas
// sharing the database; and River's own library working N no-op jobs with
// the same concurrency, on PostgreSQL (riverpgxv5, same server) and on
// SQLite (riversqlite). The ratios the targets name are computed
// from these figures.
func riverCompare(ctx context.Context, c *config, w *bytes.Buffer) error {
	n := 2000
	if c.full {
		n = 20000
	}
	const workers = 32 // pollwarden serve's default concurrency
	fmt.Fprintf(w, "### Burn-down, and River\n\n")
	fmt.Fprintf(w, "%d operations created straight into the store (the first 50, which time the creation, are set aside), the rest all due at one moment a few seconds after `pollwarden serve` started (defaults: concurrency %d), "+
		"each finished by one status request to a loopback provider that answers succeeded. The rate is operations finished per second from that moment to the last request. "+
		"Each is a durable step: lease, reservation, answer and release written before the next. With several replicas, each is its own `pollwarden serve` process on the same PostgreSQL schema.\n\n", n, workers)
	fmt.Fprintf(w, "| store | replicas | operations | burn-down | operations/s | daemons' CPU per operation | PostgreSQL server's CPU per operation | load average |\n|---|---|---|---|---|---|---|---|\n")
	pg := os.Getenv("POLLWARDEN_TEST_PG")
	bare, err := bareHTTP(ctx, n, workers)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "| bare loopback HTTP (nothing stored, %d clients) | | %d requests | %s | %.0f | %d µs (clients and provider, this process) | | %s |\n", workers, n, bare.took.Round(time.Millisecond), bare.rate(), bare.cpu.Microseconds(), loadavg())
	rates := map[string]float64{}
	cpus := map[string][2]time.Duration{} // CPU per operation: the daemons' or River's, the server's
	runs := []struct {
		kind     string
		replicas int
	}{{"sqlite", 1}, {"postgres", 1}, {"postgres", 2}, {"postgres", 3}}
	for _, r := range runs {
		if r.kind == "postgres" && pg == "" {
			fmt.Fprintf(w, "| postgres | %d | not run: POLLWARDEN_TEST_PG is not set | | | | | |\n", r.replicas)
			continue
		}
		br, err := burnDown(ctx, c, r.kind, pg, n, r.replicas)
		if err != nil {
			fmt.Fprintf(w, "| %s | %d | failed: %s | | | | | |\n", r.kind, r.replicas, strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		rate := float64(br.done) / br.took.Seconds()
		key := fmt.Sprintf("%s/%d", r.kind, r.replicas)
		rates[key] = rate
		cpus[key] = [2]time.Duration{br.cpuPerOp, br.pgPerOp}
		server := ""
		if r.kind == "postgres" {
			server = fmt.Sprintf("%d µs", br.pgPerOp.Microseconds())
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %.0f | %d µs | %s | %s |\n", r.kind, r.replicas, br.done, br.took.Round(time.Millisecond), rate, br.cpuPerOp.Microseconds(), server, loadavg())
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "River v0.51.2, its own library (`go run ./bench` links it; the pollwarden binary does not): %d no-op jobs inserted, then one client started with %d workers (`FetchCooldown` 1 ms, `FetchPollInterval` 50 ms), timed from its start to the last job worked and to its stop (every completion written).\n\n", n, workers)
	fmt.Fprintf(w, "| River driver | jobs | to the last job worked | jobs/s | to the client's stop | River's CPU per job (this process) | PostgreSQL server's CPU per job | load average |\n|---|---|---|---|---|---|---|---|\n")
	for _, kind := range []string{"postgres", "sqlite"} {
		if kind == "postgres" && pg == "" {
			fmt.Fprintf(w, "| riverpgxv5 | not run: POLLWARDEN_TEST_PG is not set | | | | | | |\n")
			continue
		}
		res, err := riverBurnDown(ctx, kind, pg, filepath.Join(c.tmp, "river-"+kind), n, workers)
		name := map[string]string{"postgres": "riverpgxv5", "sqlite": "riversqlite"}[kind]
		if err != nil {
			fmt.Fprintf(w, "| %s | failed: %s | | | | | | |\n", name, strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		rate := float64(n) / res.worked.Seconds()
		rates["river-"+kind] = rate
		cpus["river-"+kind] = [2]time.Duration{res.cpu, res.pg}
		server := ""
		if kind == "postgres" {
			server = fmt.Sprintf("%d µs", res.pg.Microseconds())
		}
		fmt.Fprintf(w, "| %s | %d | %s | %.0f | %s | %d µs | %s | %s |\n", name, n, res.worked.Round(time.Millisecond), rate, res.stopped.Round(time.Millisecond), res.cpu.Microseconds(), server, loadavg())
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Ratios from this run (River's job does nothing; each pollwarden operation makes an HTTP request and writes its audit trail):\n\n")
	fmt.Fprintf(w, "| ratio | value | target |\n|---|---|---|\n")
	ratio := func(name, a, b string, bv float64, target string, least float64) {
		av, ok := rates[a]
		if b != "" {
			bv = rates[b]
		}
		if !ok || bv == 0 {
			fmt.Fprintf(w, "| %s | not measured | %s |\n", name, target)
			return
		}
		fmt.Fprintf(w, "| %s | %.2f | %s |\n", name, av/bv, target)
		if least > 0 {
			c.target(name, fmt.Sprintf("%.0f ÷ %.0f = %.2f", av, bv, av/bv), target, av/bv >= least, "go run ./bench -only river")
		}
	}
	ratio("SQLite burn-down ÷ bare loopback HTTP", "sqlite/1", "", bare.rate(), "≥ 0.25", 0.25)
	ratio("PostgreSQL burn-down (1 replica) ÷ River on PostgreSQL", "postgres/1", "river-postgres", 0, "≥ 0.6", 0.6)
	ratio("PostgreSQL burn-down (1 replica) ÷ SQLite burn-down", "postgres/1", "sqlite/1", 0, "≥ 1.0", 1.0)
	ratio("PostgreSQL, 2 replicas ÷ 1 replica", "postgres/2", "postgres/1", 0, "", 0)
	ratio("PostgreSQL, 3 replicas ÷ 1 replica", "postgres/3", "postgres/1", 0, "", 0)
	ratio("SQLite burn-down ÷ River on SQLite", "sqlite/1", "river-sqlite", 0, "", 0)
	fmt.Fprintln(w)
	for _, k := range []struct{ key, name string }{{"sqlite/1", "SQLite"}, {"postgres/1", "PostgreSQL (1 replica)"}} {
		if v, ok := cpus[k.key]; ok {
			c.target("daemon CPU per durable step, "+k.name, fmt.Sprintf("%d µs", v[0].Microseconds()), "≤ 150 µs", v[0] <= 150*time.Microsecond, "go run ./bench -only river")
		}
	}
	if pw, ok := cpus["postgres/1"]; ok {
		if rv, ok := cpus["river-postgres"]; ok && rv[0] > 0 {
			c.target("daemon CPU per durable step, PostgreSQL (1 replica) ÷ River's CPU per job", fmt.Sprintf("%d ÷ %d µs = %.1f", pw[0].Microseconds(), rv[0].Microseconds(), float64(pw[0])/float64(rv[0])),
				"≤ 2 (the goal)", pw[0] <= 2*rv[0], "go run ./bench -only river")
		}
	}
	writeCapacity(w, cpus)
	return nil
}

// machineCores is the cores of each machine in the capacity table: this
// machine's, as if each replica and the server had one like it.
const machineCores = 2

// writeCapacity turns CPU per step into the steps per second that N
// replicas on machines of their own could sustain against one PostgreSQL
// server on its own machine: each replica is bound by its CPU per step,
// the fleet by the server's. Replicas on this one machine share its two
// cores with the server, so their measured ratio cannot show scale-out.
func writeCapacity(w *bytes.Buffer, cpus map[string][2]time.Duration) {
	type row struct{ name, key string }
	rows := []row{{"pollwarden on PostgreSQL (1 replica's figures)", "postgres/1"}, {"River on PostgreSQL (riverpgxv5)", "river-postgres"}}
	var have []row
	for _, r := range rows {
		if v, ok := cpus[r.key]; ok && v[0] > 0 && v[1] > 0 {
			have = append(have, r)
		}
	}
	if len(have) == 0 {
		return
	}
	replicas := []int{1, 2, 3, 5, 10}
	fmt.Fprintf(w, "Capacity implied by CPU per step, each replica (or River client) and the PostgreSQL server on a %d-core machine of its own: min(N × %d cores ÷ client CPU per step, %d cores ÷ server CPU per step), steps/s. The server's CPU is that of the backends serving the bench's own connections (told by their application_name in `pg_stat_activity`, read from /proc; `pg_stat_statements` is not loaded on this server), not of its WAL writer and checkpointer, which other users of the shared server drive too.\n\n", machineCores, machineCores, machineCores)
	fmt.Fprintf(w, "| | client CPU per step | server CPU per step |")
	for _, n := range replicas {
		fmt.Fprintf(w, " N = %d |", n)
	}
	fmt.Fprintf(w, "\n|---|---|---|%s\n", strings.Repeat("---|", len(replicas)))
	for _, r := range have {
		v := cpus[r.key]
		fmt.Fprintf(w, "| %s | %d µs | %d µs |", r.name, v[0].Microseconds(), v[1].Microseconds())
		server := float64(machineCores) / v[1].Seconds()
		for _, n := range replicas {
			fleet := float64(n*machineCores) / v[0].Seconds()
			bound := ""
			if server < fleet {
				fleet, bound = server, " (server)"
			}
			fmt.Fprintf(w, " %.0f%s |", fleet, bound)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// burnDown runs one burn-down with replicas daemons on one store and
// returns how many operations fell due together and the time from that
// moment to the provider's last request.
func burnDown(ctx context.Context, c *config, kind, pgURL string, n, replicas int) (burnResult, error) {
	dir := filepath.Join(c.tmp, fmt.Sprintf("burn-%s-%d", kind, replicas))
	if err := mkdirs(dir); err != nil {
		return burnResult{}, err
	}
	prov, err := startProvider(answerSucceeded)
	if err != nil {
		return burnResult{}, err
	}
	defer prov.close()
	served, last := &prov.served, &prov.last
	yaml := burnContract(prov.addr)
	ct, err := contract.Parse([]byte(yaml))
	if err != nil {
		return burnResult{}, err
	}
	var st pollwarden.Store
	storeArg := filepath.Join(dir, "burn.db")
	if kind == "postgres" {
		schema := fmt.Sprintf("pw_bench_burn_%d_%d", os.Getpid(), replicas)
		u, err := url.Parse(pgURL)
		if err != nil {
			return burnResult{}, err
		}
		q := u.Query()
		q.Set("schema", schema)
		q.Set("application_name", benchApp("burn"))
		u.RawQuery = q.Encode()
		storeArg = u.String()
		ps, err := postgres.Open(ctx, pgURL, postgres.Options{Schema: schema})
		if err != nil {
			return burnResult{}, err
		}
		st = ps
		defer dropSchema(pgURL, schema)
	} else {
		ss, err := sqlite.Open(ctx, storeArg, sqlite.Options{})
		if err != nil {
			return burnResult{}, err
		}
		st = ss
	}
	var daemons []*daemon
	for i := range replicas {
		rdir := filepath.Join(dir, fmt.Sprintf("replica-%d", i))
		if err := mkdirs(rdir); err != nil {
			st.Close()
			return burnResult{}, err
		}
		d, _, err := startDaemon(ctx, c, rdir, storeArg, yaml)
		if err != nil {
			st.Close()
			return burnResult{}, err
		}
		defer d.stop()
		daemons = append(daemons, d)
	}
	// Estimate the creation rate, then place the due moment after the last.
	t0 := time.Now()
	r := randSource(3)
	create := func(k int, due time.Time) error {
		op, evs, err := policy.NewOperation(ct, policy.NewParams{ID: "b-" + strconv.Itoa(k), ProviderJobID: strconv.Itoa(k), Rand: r}, time.Now())
		if err != nil {
			return err
		}
		op.NextPollAt = due
		return st.OperationCreate(ctx, op, evs)
	}
	far := time.Now().Add(time.Hour)
	probe := min(n, 50)
	for k := range probe {
		if err := create(k, far); err != nil {
			st.Close()
			return burnResult{}, err
		}
	}
	per := time.Since(t0) / time.Duration(probe)
	due := time.Now().Add(per*time.Duration(n-probe)*2 + 3*time.Second)
	for k := probe; k < n; k++ {
		if err := create(k, due); err != nil {
			st.Close()
			return burnResult{}, err
		}
	}
	st.Close()
	if time.Now().After(due) {
		return burnResult{}, fmt.Errorf("creating the operations took longer than planned; the burn-down would overlap it")
	}
	// The first probe operations were placed an hour out; the daemon only
	// burns the n−probe that fall due together.
	want := int64(n - probe)
	var ticks0 int64
	for _, d := range daemons {
		ticks0 += d.cpuTicks()
	}
	span := startCPU()
	for served.Load() < want {
		if time.Since(due) > 30*time.Minute {
			return burnResult{}, fmt.Errorf("only %d of %d operations finished in 30 minutes", served.Load(), want)
		}
		select {
		case <-ctx.Done():
			return burnResult{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	var ticks int64
	for _, d := range daemons {
		ticks += d.cpuTicks()
	}
	var pgPer time.Duration
	if kind == "postgres" {
		pgPer = span.pgPer(ctx, pgURL, benchApp("burn"), int(want))
	}
	// The daemons' CPU (not PostgreSQL's) from the end of the creation,
	// after which they idle until the due moment, to the last request, in
	// clock ticks of 10 ms, per operation burnt.
	return burnResult{done: int(want), took: time.Duration(last.Load() - due.UnixNano()), cpuPerOp: time.Duration(ticks-ticks0) * 10 * time.Millisecond / time.Duration(want), pgPerOp: pgPer}, nil
}

// burnResult is one burn-down: operations finished, the time from their
// due moment to the last status request, and the daemons' CPU time per
// operation over that span, and the PostgreSQL server's (0 on SQLite).
type burnResult struct {
	done              int
	took              time.Duration
	cpuPerOp, pgPerOp time.Duration
}

func dropSchema(pgURL, schema string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
}

// bareResult is the bare loopback HTTP ceiling: requests to a provider
// like the burn-down's, from clients in this process, nothing stored.
type bareResult struct {
	n    int
	took time.Duration
	cpu  time.Duration // this process's CPU per request
}

func (b bareResult) rate() float64 { return float64(b.n) / b.took.Seconds() }

// bareHTTP sends n status requests with clients goroutines to a loopback
// provider that answers as the burn-down's does: the most requests per
// second this machine serves over loopback HTTP with nothing written, the
// ceiling a durable step is compared with.
func bareHTTP(ctx context.Context, n, clients int) (bareResult, error) {
	// The burn-down's own provider, counting included, so the ceiling
	// and the burn-down differ by what the daemon does and nothing else.
	prov, err := startProvider(answerSucceeded)
	if err != nil {
		return bareResult{}, err
	}
	defer prov.close()
	base := "http://" + prov.addr + "/v1/jobs/"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var next atomic.Int64
	errs := make(chan error, clients)
	span := startCPU()
	t0 := time.Now()
	for range clients {
		go func() {
			for {
				k := next.Add(1)
				if k > int64(n) {
					errs <- nil
					return
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+strconv.FormatInt(k, 10), nil)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			return bareResult{}, err
		}
	}
	took := time.Since(t0)
	cpu := span.per(n)
	return bareResult{n: n, took: took, cpu: cpu}, nil
}
