package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/postgres"
	"github.com/pollwarden/pollwarden/sqlite"
)

// TestKill9DuringCreatesNeverAnUnrecordedRequest registers operations
// through POST /v1/operations while the daemon polls them, each due at
// once (so its first claim is made in its create's write and its request
// sent after the 201), and kills the daemon with SIGKILL in the middle of
// the creates: some operations are then between their create's commit and
// their first request. Read from the store file before any restart, every
// operation answered 201 is stored, and no job got more requests than its
// record counts (R11: at worst a reservation left unused). Restarted, the
// daemon brings every operation to its outcome once the dead leases
// expired, within budget and never two requests at once for a job.
func TestKill9DuringCreatesNeverAnUnrecordedRequest(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "pw.db")
		kill9DuringCreates(t, path, func() (pollwarden.Store, error) {
			return sqlite.Open(context.Background(), path, sqlite.Options{})
		})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := pgStore(t)
		// The daemon's own "schema" parameter, which the driver takes
		// as an option.
		base, schema, _ := strings.Cut(url, "schema=")
		kill9DuringCreates(t, url, func() (pollwarden.Store, error) {
			return postgres.Open(context.Background(), strings.TrimRight(base, "?&"), postgres.Options{Schema: schema})
		})
	})
}

// kill9DuringCreates runs the test on the store at store, which open
// opens from the test itself.
func kill9DuringCreates(t *testing.T, store string, open func() (pollwarden.Store, error)) {
	const n = 300
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	var sent atomic.Int64
	srv.OnRequest(func(string) { sent.Add(1) })
	for i := range n {
		job := fmt.Sprintf("c%03d", i)
		srv.Script(job, fp.State("running", nil), fp.State("running", nil), fp.Succeeded("https://files.example.com/"+job))
	}
	dir := t.TempDir()
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum("agent-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	contractFile(t, cdir, srv.URL())
	args := []string{"serve", "--listen", "127.0.0.1:0", "--store", store, "--contracts", cdir,
		"--tokens", filepath.Join(dir, "tokens.yaml"), "--lease-slack", testLeaseSlack}
	p := start(t, args...)
	defer p.cmd.Process.Kill()
	base := listenAddr(t, p)
	var mu sync.Mutex
	created := map[string]bool{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				job := fmt.Sprintf("c%03d", i)
				code, _, err := do(base, "POST", "/v1/operations", fmt.Sprintf(`{"operation_id":"op-%s","contract":"proc-test","job_id":%q}`, job, job))
				if err != nil {
					return // the daemon was killed
				}
				if code == 201 {
					mu.Lock()
					created["op-"+job] = true
					mu.Unlock()
				}
			}
		})
	}
	waitFor(t, "the provider to answer 60 requests", func() bool { return sent.Load() >= 60 })
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	// The process is reaped: no request of it can still reach the
	// provider, which counts each as it arrives.
	wg.Wait()

	st, err := open()
	if err != nil {
		t.Fatal(err)
	}
	ops, err := st.OperationList(context.Background(), pollwarden.ListParams{Limit: 2 * n})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]*pollwarden.Operation{}
	unused := 0
	for _, op := range ops {
		stored[op.ID] = op
		got := srv.Count(op.ProviderJobID)
		if got > op.StatusRequestsUsed {
			t.Errorf("%s: the provider saw %d requests, the store counts %d (R11)", op.ID, got, op.StatusRequestsUsed)
		}
		if got < op.StatusRequestsUsed {
			unused++
		}
	}
	_ = st.Close()
	for id := range created {
		if stored[id] == nil {
			t.Errorf("%s was answered 201 but is not stored", id)
		}
	}
	for i := range n {
		job := fmt.Sprintf("c%03d", i)
		if srv.Count(job) > 0 && stored["op-"+job] == nil {
			t.Errorf("%s: the provider saw a request for an operation never stored", job)
		}
	}
	if len(created) == 0 || len(created) == n {
		t.Fatalf("%d of %d creates answered before the kill: the kill did not land among the creates", len(created), n)
	}
	t.Logf("at the kill: %d creates answered, %d stored, %d requests sent, %d reservations unused", len(created), len(stored), sent.Load(), unused)

	p2 := start(t, args...)
	defer p2.cmd.Process.Kill()
	base = listenAddr(t, p2)
	waitForWithin(t, 2*time.Minute, "every operation to reach an outcome", func() bool {
		code, b, err := do(base, "GET", "/v1/operations?phase=waiting&limit=1", "")
		var page struct {
			Operations []json.RawMessage `json:"operations"`
		}
		return err == nil && code == 200 && json.Unmarshal(b, &page) == nil && len(page.Operations) == 0
	})
	for id, op := range stored {
		code, b, err := do(base, "GET", "/v1/operations/"+id, "")
		var rec fleetRecord
		if err != nil || code != 200 || json.Unmarshal(b, &rec) != nil {
			t.Fatalf("%s: %d %s %v", id, code, b, err)
		}
		got := srv.Count(op.ProviderJobID)
		switch {
		case rec.Phase != "succeeded":
			t.Errorf("%s: %s after %d requests, want succeeded", id, rec.Phase, got)
		case got > rec.StatusRequestsUsed || rec.StatusRequestsUsed > rec.MaxStatusRequests:
			t.Errorf("%s: the provider saw %d requests; %d counted, budget %d", id, got, rec.StatusRequestsUsed, rec.MaxStatusRequests)
		case srv.MaxInFlight(op.ProviderJobID) > 1:
			t.Errorf("%s had %d requests at once", id, srv.MaxInFlight(op.ProviderJobID))
		}
	}
	assertNoCanary(t, dir, p, p2)
}
