package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
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

// riverCompare measures a pollwarden burn-down — N operations falling due
// at the same moment in front of a running daemon, each finished by one
// status request — on SQLite and, with POLLWARDEN_TEST_PG, on PostgreSQL
// in a throwaway schema; and, only when a `river` binary is on PATH and
// POLLWARDEN_TEST_PG is set, River's own `river bench` burn-down of the
// same number of jobs in a throwaway database on the same server. River
// is installed by the user from the module proxy (`go install
// github.com/riverqueue/river/cmd/river@VERSION`); nothing of River is
// built, fetched or kept by this program.
func riverCompare(ctx context.Context, c *config, w *bytes.Buffer) error {
	n := 2000
	if c.full {
		n = 20000
	}
	fmt.Fprintf(w, "### Burn-down, and River\n\n")
	fmt.Fprintf(w, "%d operations created straight into the store (the first 50, which time the creation, are set aside), the rest all due at one moment a few seconds after `pollwarden serve` started (defaults: concurrency 32), "+
		"each finished by one status request to a loopback provider that answers succeeded. The rate is operations finished per second from that moment to the last request. "+
		"Each is a durable step: lease, reservation, answer and release written before the next.\n\n", n)
	fmt.Fprintf(w, "| store | operations | burn-down | operations/s |\n|---|---|---|---|\n")
	pg := os.Getenv("POLLWARDEN_TEST_PG")
	for _, kind := range []string{"sqlite", "postgres"} {
		if kind == "postgres" && pg == "" {
			fmt.Fprintf(w, "| PostgreSQL | not run: POLLWARDEN_TEST_PG is not set | | |\n")
			continue
		}
		done, took, err := burnDown(ctx, c, kind, pg, n)
		if err != nil {
			fmt.Fprintf(w, "| %s | failed: %s | | |\n", kind, strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %s | %.0f |\n", kind, done, took.Round(time.Millisecond), float64(done)/took.Seconds())
	}
	fmt.Fprintln(w)
	path, err := exec.LookPath("river")
	switch {
	case err != nil:
		fmt.Fprintf(w, "River: not run, no `river` binary on PATH. Its CLI is its own module, "+
			"`go install github.com/riverqueue/river/cmd/river@<version>`; the module proxy this was measured with serves River's library "+
			"but not that module, so it could not be built here. With a `river` on PATH and POLLWARDEN_TEST_PG set to a server where a "+
			"throwaway database may be created, this part runs `river bench` beside the burn-down above.\n\n")
		return nil
	case pg == "":
		fmt.Fprintf(w, "River: not run, POLLWARDEN_TEST_PG is not set.\n\n")
		return nil
	}
	out, err := riverBench(ctx, path, pg, n)
	if err != nil {
		fmt.Fprintf(w, "River (%s): failed: %s\n\n", path, strings.ReplaceAll(err.Error(), "\n", " "))
		return nil
	}
	fmt.Fprintf(w, "River (`%s bench --num-total-jobs %d`, its own no-op jobs, on the same PostgreSQL in a throwaway database), its output:\n\n```\n%s\n```\n\n", path, n, strings.TrimSpace(out))
	fmt.Fprintf(w, "River's job does nothing; each pollwarden operation makes an HTTP request and writes its audit trail, so the two rates bound different work.\n\n")
	return nil
}

// burnDown runs one burn-down and returns how many operations fell due
// together and the time from that moment to the provider's last request.
func burnDown(ctx context.Context, c *config, kind, pgURL string, n int) (int, time.Duration, error) {
	dir := filepath.Join(c.tmp, "burn-"+kind)
	if err := mkdirs(dir); err != nil {
		return 0, 0, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	var served atomic.Int64
	var last atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		served.Add(1)
		last.Store(time.Now().UnixNano())
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"state":"succeeded","result":{"url":"https://results.example.com%s"}}`, r.URL.Path)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	yaml := burnContract(ln.Addr().String())
	ct, err := contract.Parse([]byte(yaml))
	if err != nil {
		return 0, 0, err
	}
	var st pollwarden.Store
	storeArg := filepath.Join(dir, "burn.db")
	if kind == "postgres" {
		schema := fmt.Sprintf("pw_bench_burn_%d", os.Getpid())
		u, err := url.Parse(pgURL)
		if err != nil {
			return 0, 0, err
		}
		q := u.Query()
		q.Set("schema", schema)
		u.RawQuery = q.Encode()
		storeArg = u.String()
		ps, err := postgres.Open(ctx, pgURL, postgres.Options{Schema: schema})
		if err != nil {
			return 0, 0, err
		}
		st = ps
		defer dropSchema(pgURL, schema)
	} else {
		ss, err := sqlite.Open(ctx, storeArg, sqlite.Options{})
		if err != nil {
			return 0, 0, err
		}
		st = ss
	}
	d, _, err := startDaemon(ctx, c, dir, storeArg, yaml)
	if err != nil {
		st.Close()
		return 0, 0, err
	}
	defer d.stop()
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
			return 0, 0, err
		}
	}
	per := time.Since(t0) / time.Duration(probe)
	due := time.Now().Add(per*time.Duration(n-probe)*2 + 3*time.Second)
	for k := probe; k < n; k++ {
		if err := create(k, due); err != nil {
			st.Close()
			return 0, 0, err
		}
	}
	st.Close()
	if time.Now().After(due) {
		return 0, 0, fmt.Errorf("creating the operations took longer than planned; the burn-down would overlap it")
	}
	// The first probe operations were placed an hour out; the daemon only
	// burns the n−probe that fall due together.
	want := int64(n - probe)
	for served.Load() < want {
		if time.Since(due) > 30*time.Minute {
			return 0, 0, fmt.Errorf("only %d of %d operations finished in 30 minutes", served.Load(), want)
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return int(want), time.Duration(last.Load() - due.UnixNano()), nil
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

// riverBench runs `river migrate-up` and `river bench` in a throwaway
// database on pgURL's server, dropped afterwards.
func riverBench(ctx context.Context, river, pgURL string, n int) (string, error) {
	db := fmt.Sprintf("pw_river_bench_%d", os.Getpid())
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
	u, err := url.Parse(pgURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + db
	dbURL := u.String()
	if out, err := exec.CommandContext(ctx, river, "migrate-up", "--database-url", dbURL).CombinedOutput(); err != nil {
		return "", fmt.Errorf("river migrate-up: %v: %s", err, out)
	}
	out, err := exec.CommandContext(ctx, river, "bench", "--database-url", dbURL, "--num-total-jobs", strconv.Itoa(n)).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("river bench: %v: %s", err, out)
	}
	return string(out), nil
}
