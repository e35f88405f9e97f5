package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// fleetOps is how many operations TestFleetThreeReplicasOnePostgres
// registers; PW_FLEET_OPS overrides it. Every promise is checked on each
// of them and the six-kind mix repeats dozens of times, so the default
// keeps `go test ./...` short; CI runs the fleet again at 2,000
// (registration alone takes about a minute there).
const fleetOps = 400

// transitAllowance is how long after the daemon's last deadline check a
// request may reach the fake provider's log: building the request, loopback
// and the handler's scheduling on a loaded 2-core machine under -race. A
// request recorded later than the deadline plus this left after the
// deadline. (Before the re-check after the reservation, requests arrived
// 23–141 ms late here.)
const transitAllowance = 20 * time.Millisecond

// fleet is three `pollwarden serve` processes on one store; a replica that
// is killed is restarted with the same arguments on a new port.
type fleet struct {
	t    *testing.T
	args []string

	mu    sync.Mutex
	procs [3]*proc
	bases [3]string
	all   []*proc
}

func (f *fleet) start(i int) {
	f.t.Helper()
	p := start(f.t, f.args...)
	base := listenAddr(f.t, p)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.procs[i], f.bases[i] = p, base
	f.all = append(f.all, p)
}

func (f *fleet) base(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bases[i%3]
}

// kill9 kills replica i with SIGKILL (no shutdown, leases left held,
// reservations possibly unused) and starts it again.
func (f *fleet) kill9(i int) {
	f.t.Helper()
	f.mu.Lock()
	p := f.procs[i]
	f.bases[i] = "http://127.0.0.1:1" // refused until the restart listens
	f.mu.Unlock()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		f.t.Fatal(err)
	}
	_ = p.cmd.Wait()
	f.start(i)
}

var fleetClient = &http.Client{Timeout: 20 * time.Second}

// do is call without t.Fatal, for goroutines and for retrying across
// replicas.
func do(base, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer agent-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := fleetClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// fleetRecord is the part of an operation's public view the test checks.
type fleetRecord struct {
	OperationID        string    `json:"operation_id"`
	Phase              string    `json:"phase"`
	Outcome            *string   `json:"outcome"`
	Reason             *string   `json:"reason"`
	StatusRequestsUsed int       `json:"status_requests_used"`
	MaxStatusRequests  int       `json:"max_status_requests"`
	DeadlineAt         time.Time `json:"deadline_at"`
}

// fleetJob scripts job i of the mix and returns its registration body:
// success after a few polls, running until the budget, an unknown state,
// 503s (then success, or for good), a provider failure, and slow answers
// against a short deadline.
func fleetJob(srv *fp.Server, i int) string {
	job := fmt.Sprintf("j%05d", i)
	extra := ""
	switch i % 6 {
	case 0: // succeeds after 1 to 4 polls
		steps := make([]fp.Step, 0, 5)
		for range i/6%4 + 1 {
			steps = append(steps, fp.State("running", nil))
		}
		srv.Script(job, append(steps, fp.Succeeded("https://files.example.com/"+job+".csv"))...)
	case 1: // runs until its budget, 2 to 6 requests
		srv.Script(job, fp.State("running", nil))
		extra = fmt.Sprintf(`,"max_status_requests":%d`, 2+i/6%5)
	case 2: // a state the contract does not know
		srv.Script(job, fp.State("queued", nil), fp.State("mystery", nil))
	case 3: // 503s, then success or for good
		if i/6%2 == 0 {
			srv.Script(job, fp.Code(503, nil), fp.Code(503, nil), fp.Succeeded("https://files.example.com/"+job+".csv"))
		} else {
			srv.Script(job, fp.Code(503, map[string]string{"Retry-After": "0"}))
		}
		extra = `,"max_status_requests":6`
	case 4: // fails after a poll
		srv.Script(job, fp.State("running", nil), fp.Failed("export failed"))
	case 5: // slow answers against a short deadline: the deadline or the budget ends it
		srv.Script(job, fp.Step{JSON: map[string]any{"state": "running"}, Delay: 150 * time.Millisecond})
		extra = `,"deadline":"1500ms"`
	}
	return fmt.Sprintf(`{"operation_id":"fleet-%05d","contract":"fleet","job_id":%q%s}`, i, job, extra)
}

// TestFleetThreeReplicasOnePostgres runs three daemons on one PostgreSQL
// schema against one provider, registers operations through all three,
// kills one replica with SIGKILL twice and restarts it, and then checks
// the fleet's promises on every operation: an outcome; never more status
// requests than the budget, each counted; never two at once for a job;
// none at or after the deadline; and an intact audit chain.
//
// It is the one process test that does not run in parallel with the
// others: its deadline check reads arrivals at the provider with 20 ms of
// transit allowed, which other tests' load on the same cores exceeds.
func TestFleetThreeReplicasOnePostgres(t *testing.T) {
	store := pgStore(t)
	n := fleetOps
	if s := os.Getenv("PW_FLEET_OPS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("PW_FLEET_OPS=%q: want a positive number", s)
		}
		n = v
	}
	began := time.Now()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)

	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: fleet
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 1s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: {base: 20ms, max: 100ms}
limits: {deadline: 60s, max_status_requests: 8, max_transport_failures: 3, max_rate_limited: 3}
`, srv.URL())
	if err := os.WriteFile(filepath.Join(cdir, "fleet.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum("agent-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	bodies := make([]string, n)
	for i := range n {
		bodies[i] = fleetJob(srv, i)
	}

	f := &fleet{t: t, args: []string{"serve", "--listen", "127.0.0.1:0", "--store", store,
		"--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"), "--lease-slack", testLeaseSlack}}
	for i := range 3 {
		f.start(i)
	}
	defer func() {
		for _, p := range f.all {
			_ = p.cmd.Process.Kill()
		}
	}()

	// Register through all three replicas; a POST that meets a killed
	// replica is retried on the next one with the same body (the id makes
	// it idempotent).
	var registered atomic.Int64
	var wg sync.WaitGroup
	next := make(chan int)
	for range 12 {
		wg.Go(func() {
			for i := range next {
				var last string
				ok := false
				for attempt := range 40 {
					code, b, err := do(f.base(i+attempt), "POST", "/v1/operations", bodies[i])
					if err == nil && (code == 201 || code == 200) {
						ok = true
						break
					}
					last = fmt.Sprintf("%d %s %v", code, b, err)
					time.Sleep(50 * time.Millisecond)
				}
				if !ok {
					t.Errorf("registering operation %d: %s", i, last)
				}
				registered.Add(1)
			}
		})
	}
	go func() {
		defer close(next)
		for i := range n {
			next <- i
		}
	}()

	// Replica 0 dies twice: once while operations are being registered,
	// once after, while they are being polled.
	// Registration runs at tens per second under -race on two shared
	// cores, so the wait is generous: it bounds a hang, not a speed.
	waitForWithin(t, 3*time.Minute, "a third of the operations to be registered", func() bool { return registered.Load() >= int64(n/3) })
	f.kill9(0)
	wg.Wait()
	registeredIn := time.Since(began)
	time.Sleep(500 * time.Millisecond)
	f.kill9(0)

	// Every operation leaves waiting (held leases of the killed replica
	// expire after 2×timeout+slack = 2.2 s).
	deadline := time.Now().Add(3 * time.Minute)
	for {
		code, b, err := do(f.base(1), "GET", "/v1/operations?phase=waiting&limit=1000", "")
		var l struct{ Operations []fleetRecord }
		if err == nil && code == 200 && json.Unmarshal(b, &l) == nil && len(l.Operations) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("operations still waiting after 3 minutes (%d listed; %d %v)", len(l.Operations), code, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	settledIn := time.Since(began)

	// Read every record back, through all three replicas.
	recs := make([]fleetRecord, n)
	idx := make(chan int)
	var rg sync.WaitGroup
	for range 8 {
		rg.Go(func() {
			for i := range idx {
				code, b, err := do(f.base(i), "GET", fmt.Sprintf("/v1/operations/fleet-%05d", i), "")
				if err != nil || code != 200 || json.Unmarshal(b, &recs[i]) != nil {
					t.Errorf("operation %d: %d %s %v", i, code, b, err)
				}
			}
		})
	}
	for i := range n {
		idx <- i
	}
	close(idx)
	rg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	outcomes := map[string]int{}
	var late []string
	requests, unused := 0, 0
	for i, r := range recs {
		job := fmt.Sprintf("j%05d", i)
		count, peak := srv.Count(job), srv.MaxInFlight(job)
		requests += count
		unused += r.StatusRequestsUsed - count
		reason := ""
		if r.Reason != nil {
			reason = "/" + *r.Reason
		}
		outcomes[r.Phase+reason]++
		switch {
		case r.Outcome == nil || r.Phase == "waiting":
			t.Errorf("%s has no outcome: phase %s", r.OperationID, r.Phase)
		case count > r.MaxStatusRequests:
			t.Errorf("%s: the provider saw %d status requests, budget %d", r.OperationID, count, r.MaxStatusRequests)
		case r.StatusRequestsUsed < count:
			t.Errorf("%s: %d status requests stored as used, the provider saw %d", r.OperationID, r.StatusRequestsUsed, count)
		case peak > 1 || (count > 0 && peak != 1):
			t.Errorf("%s: %d requests in flight at once", r.OperationID, peak)
		}
		for _, req := range srv.Requests(job) {
			if !req.Time.Before(r.DeadlineAt.Add(transitAllowance)) {
				late = append(late, fmt.Sprintf("%s: a request arrived at %s, %s after the deadline %s", r.OperationID,
					req.Time.Format(time.RFC3339Nano), req.Time.Sub(r.DeadlineAt), r.DeadlineAt.Format(time.RFC3339Nano)))
			}
		}
	}
	var summary []string
	for k, v := range outcomes {
		summary = append(summary, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(summary)
	t.Logf("%d operations, %d provider status requests (%d reservations unused): registered in %s, settled in %s; %s",
		n, requests, unused, registeredIn.Round(time.Millisecond), settledIn.Round(time.Millisecond), strings.Join(summary, " "))

	t.Run("no request at or after the deadline", func(t *testing.T) {
		if len(late) == 0 {
			return
		}
		msg := fmt.Sprintf("%d requests arrived at or after their operation's deadline:\n%s", len(late), strings.Join(late, "\n"))
		t.Error(msg)
	})

	v := start(t, "audit", "verify", "--store", store)
	if code := v.exitCode(t); code != 0 {
		t.Fatalf("audit verify exit %d: %s%s", code, v.stdout.String(), v.stderr.String())
	}
	t.Logf("audit verify: %s", strings.TrimSpace(v.stdout.String()))

	for i := range 3 {
		if err := f.procs[i].cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if code := f.procs[i].exitCode(t); code != 0 {
			t.Errorf("replica %d exited %d after SIGTERM: %s", i, code, f.procs[i].stderr.String())
		}
	}
	assertNoCanary(t, dir, append(f.all, v)...)
}
