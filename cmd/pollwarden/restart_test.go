package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// restartCeiling is the contract's limits.max_requests_per_second in
// TestServeRestartWith500InFlight; the scheduler's per-contract bucket
// holds one request, so no window of one second may see more than
// restartCeiling+1 requests leave the daemon.
const restartCeiling = 160

// restartTransit is how much the provider's clock may bunch requests
// that left the daemon at the ceiling's pace: the fake provider logs
// arrivals, and on a loaded machine loopback and the handler's
// scheduling hold some back and deliver them together (83 in a second
// was seen at 80/s with the bucket working). Unthrottled, the 500 overdue
// operations arrive within a fraction of a second of the restart.
const restartTransit = 100 * time.Millisecond

// restartMax is the most arrivals the provider may log in one second:
// the burst of one, plus a second and the transit allowance at the
// ceiling.
const restartMax = 1 + int(restartCeiling*(time.Second+restartTransit)/time.Second)

// TestServeRestartWith500InFlight registers 500 operations with the real
// daemon, kills it with SIGKILL once the provider has answered a few
// hundred requests, leaves every operation overdue, and starts it again:
// every operation reaches an outcome, none exceeds its budget or has two
// requests at once, and the provider never sees more than the contract's
// ceiling in any one-second window — least of all in the first second
// after the restart, when all 500 are due at once (R9 for a fleet).
func TestServeRestartWith500InFlight(t *testing.T) {
	t.Parallel()
	const n = 500
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	var mu sync.Mutex
	var seen []time.Time
	srv.OnRequest(func(string) {
		mu.Lock()
		seen = append(seen, time.Now())
		mu.Unlock()
	})
	seenSince := func(from time.Time) []time.Time {
		mu.Lock()
		defer mu.Unlock()
		var out []time.Time
		for _, at := range seen {
			if !at.Before(from) {
				out = append(out, at)
			}
		}
		return out
	}
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: restart
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 1s
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: 200ms, max: 400ms}
limits: {deadline: 5m, max_status_requests: 6, max_transport_failures: 3, max_rate_limited: 3, max_requests_per_second: %d}
`, srv.URL(), restartCeiling)
	if err := os.WriteFile(filepath.Join(cdir, "restart.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum("agent-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"),
		"--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"), "--lease-slack", testLeaseSlack}

	// Four jobs in five succeed on their third request (an answer lost at
	// the kill or to a timeout is asked again: the provider's script moves
	// on, so a lost first or second answer leaves the count at three, a
	// lost third adds a request); the fifth runs until its budget of three
	// requests.
	budget := map[string]int{}
	for i := range n {
		job := fmt.Sprintf("r%03d", i)
		if i%5 == 4 {
			srv.Script(job, fp.State("running", nil))
			budget[job] = 3
			continue
		}
		srv.Script(job, fp.State("running", nil), fp.State("running", nil), fp.Succeeded("https://files.example.com/"+job))
		budget[job] = 6
	}
	p := start(t, args...)
	defer p.cmd.Process.Kill()
	base := listenAddr(t, p)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				job := fmt.Sprintf("r%03d", i)
				extra := ""
				if budget[job] == 3 {
					extra = `,"max_status_requests":3`
				}
				code, b, err := do(base, "POST", "/v1/operations", fmt.Sprintf(`{"operation_id":"op-%s","contract":"restart","job_id":%q%s}`, job, job, extra))
				if err != nil || code != 201 {
					errs <- fmt.Errorf("register %s: %d %s %v", job, code, b, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitFor(t, "the provider to answer 400 requests", func() bool { return len(seenSince(time.Time{})) >= 400 })
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	before := len(seenSince(time.Time{}))
	// Longer than the largest delay: every waiting operation is overdue.
	time.Sleep(600 * time.Millisecond)
	// What each job had been answered when the daemon died, read once no
	// request of the dead process can still be arriving.
	atKill := map[string]int{}
	for job := range budget {
		atKill[job] = srv.Count(job)
	}

	restarted := time.Now()
	p2 := start(t, args...)
	defer p2.cmd.Process.Kill()
	base = listenAddr(t, p2)
	// About 1,100 requests remain at 160/s, the operations whose leases
	// were held at the kill after those expire (2×timeout+slack = 2.2 s):
	// the test allows many times that for -race.
	waitForWithin(t, 3*time.Minute, "every operation to reach an outcome", func() bool {
		code, b, err := do(base, "GET", "/v1/operations?phase=waiting&limit=1", "")
		var page struct {
			Operations []json.RawMessage `json:"operations"`
		}
		return err == nil && code == 200 && json.Unmarshal(b, &page) == nil && len(page.Operations) == 0
	})
	after := seenSince(restarted)
	if len(after) == 0 || before < 400 {
		t.Fatalf("the test did not exercise a restart: %d requests before the kill, %d after", before, len(after))
	}
	if got := len(inFirstSecond(after)); got > restartMax {
		t.Errorf("%d requests in the first second after the restart, above the ceiling of %d/s (+1 burst, +%v transit): at most %d",
			got, restartCeiling, restartTransit, restartMax)
	}
	if peak := peakPerSecond(seenSince(time.Time{})); peak > restartMax {
		t.Errorf("a one-second window saw %d requests, above the ceiling of %d/s (+1 burst, +%v transit): at most %d",
			peak, restartCeiling, restartTransit, restartMax)
	} else {
		t.Logf("at most %d requests in any second (ceiling %d/s)", peak, restartCeiling)
	}
	for i := range n {
		job := fmt.Sprintf("r%03d", i)
		code, b, err := do(base, "GET", "/v1/operations/op-"+job, "")
		var rec fleetRecord
		if err != nil || code != 200 || json.Unmarshal(b, &rec) != nil {
			t.Fatalf("%s: %d %s %v", job, code, b, err)
		}
		sent := srv.Count(job)
		switch {
		case rec.Phase == "waiting":
			t.Errorf("%s is still waiting", job)
		case budget[job] == 6 && (rec.Phase != "succeeded" || sent < 3):
			t.Errorf("%s: %s after %d requests, want succeeded after 3", job, rec.Phase, sent)
		case budget[job] == 6 && sent > 3 && answersRead(t, base, "op-"+job) > 3:
			// An answer the daemon never read (lost at the kill, or a
			// status timeout on a loaded machine) is asked again, and when
			// it was the success that costs a fourth request. Every answer
			// it did read moved the job on: after two "running" and the
			// success nothing more is needed.
			t.Errorf("%s: %d requests (%d before the kill), and the daemon read %d answers: a request after the success was read",
				job, sent, atKill[job], answersRead(t, base, "op-"+job))
		case budget[job] == 3 && rec.Phase != "escalated":
			t.Errorf("%s: %s, want escalated on its budget", job, rec.Phase)
		case sent > rec.MaxStatusRequests || sent > rec.StatusRequestsUsed:
			t.Errorf("%s: the provider saw %d requests; %d counted, budget %d", job, sent, rec.StatusRequestsUsed, rec.MaxStatusRequests)
		case srv.MaxInFlight(job) > 1:
			t.Errorf("%s had %d requests at once", job, srv.MaxInFlight(job))
		}
	}
	if answersRead(t, base, "op-r000") < 2 {
		t.Error("op-r000's audit shows fewer than two answers read: the check above would pass on anything")
	}
	assertNoCanary(t, dir, p, p2)
}

// inFirstSecond is the part of sorted-or-not times within one second of
// the earliest.
func inFirstSecond(at []time.Time) []time.Time {
	sorted := append([]time.Time(nil), at...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Before(sorted[j]) })
	var out []time.Time
	for _, x := range sorted {
		if x.Sub(sorted[0]) < time.Second {
			out = append(out, x)
		}
	}
	return out
}

// peakPerSecond is the most requests in any window of one second.
func peakPerSecond(at []time.Time) int {
	sorted := append([]time.Time(nil), at...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Before(sorted[j]) })
	peak, lo := 0, 0
	for hi := range sorted {
		for sorted[hi].Sub(sorted[lo]) >= time.Second {
			lo++
		}
		peak = max(peak, hi-lo+1)
	}
	return peak
}

// answersRead is how many provider answers operation id's audit records
// the daemon as having read (a response with an HTTP status; a timeout or
// a request lost with its process has none).
func answersRead(t *testing.T, base, id string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/operations/"+id+"/audit", nil)
	req.Header.Set("Authorization", "Bearer agent-token")
	req.Header.Set("Accept", "application/json")
	code, b, err := 0, []byte(nil), error(nil)
	if resp, rerr := fleetClient.Do(req); rerr != nil {
		err = rerr
	} else {
		code = resp.StatusCode
		b, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	var a struct {
		Events []struct {
			Kind string
			Data struct {
				HTTPStatus int `json:"http_status"`
			}
		}
	}
	if err != nil || code != 200 || json.Unmarshal(b, &a) != nil {
		t.Fatalf("audit of %s: %d %s %v", id, code, b, err)
	}
	n := 0
	for _, e := range a.Events {
		if e.Kind == "response_received" && e.Data.HTTPStatus != 0 {
			n++
		}
	}
	return n
}
