package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// The shared quota of TestQuotaTwoReplicasTwoWaitsOnePostgres: at most
// quotaRequests credentialed requests in any window of quotaPer, so one
// every 100 ms, far below what the operations' 20 ms backoff asks for.
const (
	quotaRequests = 20
	quotaPer      = 2 * time.Second
	// quotaTransit is the window's allowance for the way from the
	// grant (a claim's write) to the provider's log: two requests granted
	// 100 ms apart may arrive closer together on a loaded machine, so the
	// check counts arrivals in windows of quotaPer less this. Without the
	// quota the operations send hundreds a second; with it spread by
	// 100 ms, a window of 1.75 s holds at most 18 grants.
	quotaTransit = 250 * time.Millisecond
)

// TestQuotaTwoReplicasTwoWaitsOnePostgres runs two `pollwarden serve`
// replicas on one PostgreSQL schema and two `pollwarden wait` processes
// on the same store, all polling under one credential whose contract
// declares a quota, against a fake provider that records the time of
// every request: the provider never sees more than the quota in any
// window. On the way, an approver's create of priority 1 is taken and an
// agent's of priority 2 refused, and GET /v1/quotas (an approver's) and
// /metrics of a replica show the key by its reference, never the secret.
func TestQuotaTwoReplicasTwoWaitsOnePostgres(t *testing.T) {
	t.Parallel()
	store := pgStore(t)
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)

	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: quota-fleet
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 1s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: {base: 20ms, max: 40ms}
limits: {deadline: 3m, max_status_requests: 20, max_transport_failures: 3, max_rate_limited: 3}
quota: {requests: %d, per: %s}
`, srv.URL(), quotaRequests, quotaPer)
	cfile := filepath.Join(cdir, "quota-fleet.yaml")
	if err := os.WriteFile(cfile, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n",
		sum("agent-token"), sum("approver-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	// Each job answers running five times, then succeeds: six requests.
	const served = 24
	var jobs []string
	script := func(job string) {
		steps := []fp.Step{}
		for range 5 {
			steps = append(steps, fp.State("running", nil))
		}
		srv.Script(job, append(steps, fp.Succeeded("https://files.example.com/"+job+".csv"))...)
		jobs = append(jobs, job)
	}
	for i := range served {
		script(fmt.Sprintf("q%02d", i))
	}
	script("w0")
	script("w1")
	script("u0")

	var bases []string
	for range 2 {
		p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", store, "--contracts", cdir,
			"--tokens", filepath.Join(dir, "tokens.yaml"), "--lease-slack", testLeaseSlack)
		t.Cleanup(func() { _ = p.cmd.Process.Kill() })
		bases = append(bases, listenAddr(t, p))
	}
	var waits []*proc
	for i := range 2 {
		p := start(t, "wait", "--contract", cfile, "--job-id", fmt.Sprintf("w%d", i), "--store", store, "--json", "--quiet")
		t.Cleanup(func() { _ = p.cmd.Process.Kill() })
		waits = append(waits, p)
	}
	for i := range served {
		call(t, bases[i%2], "agent-token", "POST", "/v1/operations",
			fmt.Sprintf(`{"operation_id":"qf-%02d","contract":"quota-fleet","job_id":"q%02d"}`, i, i), 201)
	}

	// An approver may make one more urgent; an agent may not.
	call(t, bases[1], "agent-token", "POST", "/v1/operations", `{"operation_id":"qf-agent-urgent","contract":"quota-fleet","job_id":"u0","priority":2}`, 403)
	if op := call(t, bases[1], "approver-token", "POST", "/v1/operations",
		`{"operation_id":"qf-urgent","contract":"quota-fleet","job_id":"u0","priority":1}`, 201); op["priority"] != 1.0 {
		t.Errorf("qf-urgent: priority %v, want 1", op["priority"])
	}

	// While they wait on one another: the key, by its reference, from
	// either replica; an agent may not read it.
	call(t, bases[1], "agent-token", "GET", "/v1/quotas", "", 403)
	waitFor(t, "operations waiting on the shared quota in GET /v1/quotas", func() bool {
		q := quotaView(t, bases[1])
		return q != nil && q.Limit == quotaRequests && q.Per == "2s" && q.Waiting > 0 && q.Used <= quotaRequests
	})
	m := scrape(t, bases[0])
	if got := m[`pollwarden_quota_limit{key="env:PROC_TOKEN"}`]; got != quotaRequests {
		t.Errorf(`pollwarden_quota_limit{key="env:PROC_TOKEN"} = %v, want %d`, got, quotaRequests)
	}

	for i := range served {
		waitForWithin(t, 2*time.Minute, fmt.Sprintf("qf-%02d to succeed", i), func() bool {
			op := call(t, bases[i%2], "agent-token", "GET", fmt.Sprintf("/v1/operations/qf-%02d", i), "", 200)
			return op["phase"] == "succeeded"
		})
	}
	waitForWithin(t, 2*time.Minute, "qf-urgent to succeed", func() bool {
		return call(t, bases[0], "approver-token", "GET", "/v1/operations/qf-urgent", "", 200)["phase"] == "succeeded"
	})
	for i, p := range waits {
		if code := p.exitCode(t); code != 0 {
			t.Fatalf("wait w%d: exit %d\n%s", i, code, p.stderr.String())
		}
	}

	var at []time.Time
	for _, job := range jobs {
		reqs := srv.Requests(job)
		if len(reqs) != 6 {
			t.Errorf("job %s: the provider saw %d status requests, want 6", job, len(reqs))
		}
		for _, r := range reqs {
			at = append(at, r.Time)
		}
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	most, mostAt := 0, time.Time{}
	for i := range at {
		n := 0
		for j := i; j < len(at) && at[j].Sub(at[i]) < quotaPer-quotaTransit; j++ {
			n++
		}
		if n > most {
			most, mostAt = n, at[i]
		}
	}
	if most > quotaRequests {
		t.Errorf("the provider saw %d requests in %s from %s; the quota allows %d in %s",
			most, quotaPer-quotaTransit, mostAt.Format(time.RFC3339Nano), quotaRequests, quotaPer)
	}
	span := at[len(at)-1].Sub(at[0])
	t.Logf("%d requests over %s (%.1f/s; the quota allows %.1f/s); at most %d in any %s",
		len(at), span.Round(time.Millisecond), float64(len(at)-1)/span.Seconds(),
		float64(quotaRequests)/quotaPer.Seconds(), most, quotaPer-quotaTransit)
	b, _ := json.Marshal(quotaView(t, bases[0]))
	if strings.Contains(string(b), canary) {
		t.Errorf("GET /v1/quotas shows the secret: %s", b)
	}
}

// quotaKey is one key of GET /v1/quotas, as the test reads it.
type quotaKey struct {
	Key     string `json:"key"`
	Limit   int    `json:"limit"`
	Per     string `json:"per"`
	Used    int    `json:"requests_used"`
	Waiting int    `json:"waiting"`
}

// quotaView reads the key env:PROC_TOKEN from GET /v1/quotas with the
// approver's token; nil when it is not there yet.
func quotaView(t *testing.T, base string) *quotaKey {
	t.Helper()
	m := call(t, base, "approver-token", "GET", "/v1/quotas", "", 200)
	b, _ := json.Marshal(m["quotas"])
	var keys []quotaKey
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatalf("GET /v1/quotas: %v: %s", err, b)
	}
	for _, k := range keys {
		if k.Key == "env:PROC_TOKEN" {
			return &k
		}
	}
	return nil
}
