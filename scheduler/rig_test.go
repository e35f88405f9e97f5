package scheduler_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/scheduler"
	"github.com/pollwarden/pollwarden/sqlite"
)

// contractYAML is a test contract: short backoff so runs take moments,
// a budget of five status requests, and extra limits lines.
func contractYAML(name, base, limits string) string {
	return fmt.Sprintf(`version: 1
name: %s
status: {url: "%s/jobs/{job_id}", timeout: 5s}
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: {base: 20ms, max: 40ms}
limits: {deadline: 2m, max_status_requests: 5%s}
`, name, base, limits)
}

// contracts is a reloadable set for tests: Put and Drop act as a reload.
type contracts struct {
	mu  sync.Mutex
	exs map[string]*contract.Loaded
}

func (c *contracts) Get(name string) (*contract.Loaded, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ex, ok := c.exs[name]
	return ex, ok
}

func (c *contracts) Put(ex *contract.Loaded) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exs[ex.Spec().Name] = ex
}

func (c *contracts) Drop(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.exs, name)
}

type rig struct {
	t     testing.TB
	srv   *fp.Server
	path  string
	store *sqlite.Store
	set   *contracts
	clock pollwarden.Clock
	// base is the provider transport under the scheduler's; nil is the
	// default (loopback TCP).
	base http.RoundTripper
}

func newRig(t testing.TB) *rig {
	t.Helper()
	srv := fp.New()
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "pw.db")
	r := &rig{t: t, srv: srv, path: path, set: &contracts{exs: map[string]*contract.Loaded{}},
		clock: pollwarden.RealClock{}}
	r.store = r.open(sqlite.Options{})
	return r
}

// open opens the rig's store file (again): a second handle stands for a
// second process sharing the file.
func (r *rig) open(opts sqlite.Options) *sqlite.Store {
	r.t.Helper()
	st, err := sqlite.Open(context.Background(), r.path, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { st.Close() })
	return st
}

// compile parses a contract for the rig's provider without adding it to
// the set.
func (r *rig) compile(name, limits string) *contract.Loaded {
	r.t.Helper()
	c, err := contract.Parse([]byte(contractYAML(name, r.srv.URL(), limits)))
	if err != nil {
		r.t.Fatal(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		r.t.Fatal(err)
	}
	return ex
}

// contract compiles and adds a contract to the set.
func (r *rig) contract(name, limits string) *contract.Loaded {
	ex := r.compile(name, limits)
	r.set.Put(ex)
	return ex
}

func (r *rig) controller(st pollwarden.Store, owner string, onChange func(*pollwarden.Operation)) *controller.Controller {
	return controller.New(controller.Options{
		Store: st, Clock: r.clock, Owner: owner, OnChange: onChange,
		Rand:   rand.New(rand.NewPCG(uint64(len(owner)), 7)), // the controller serialises it
		Prober: prober.New(prober.Options{Now: r.clock.Now, Transport: scheduler.Transport(r.base)}),
	})
}

func (r *rig) submit(ctl *controller.Controller, ex *contract.Loaded, id, job string) *pollwarden.Operation {
	r.t.Helper()
	op, err := ctl.Start(context.Background(), ex, policy.NewParams{ID: id, ProviderJobID: job})
	if err != nil {
		r.t.Fatal(err)
	}
	return op
}

// overdue moves an operation's next poll into the past, as if the daemon
// had been down since then.
func (r *rig) overdue(id string, since time.Duration) { r.nextPoll(id, -since) }

// nextPoll sets an operation's next poll time to now + d.
func (r *rig) nextPoll(id string, d time.Duration) {
	r.t.Helper()
	op, err := r.store.OperationGet(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	op.NextPollAt = r.clock.Now().Add(d)
	if err := r.store.OperationSave(context.Background(), pollwarden.SaveParams{Op: op}); err != nil {
		r.t.Fatal(err)
	}
}

// running is a scheduler's Run in the background.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

func start(s *scheduler.Scheduler) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx) }()
	return r
}

// stop cancels Run and waits for it to return.
func (r *running) stop(t testing.TB) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return 30 s after its context ended")
	}
}

// waitFor polls cond until it holds or the time is up.
func waitFor(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waiting counts the operations still waiting.
func (r *rig) waiting() int {
	ops, err := r.store.OperationList(context.Background(), pollwarden.ListParams{Phase: pollwarden.PhaseWaiting})
	if err != nil {
		r.t.Fatal(err)
	}
	return len(ops)
}

func (r *rig) get(id string) *pollwarden.Operation {
	r.t.Helper()
	op, err := r.store.OperationGet(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return op
}

// checkBooks checks what the provider saw against the record: no budget
// exceeded, never two requests at once for one job, and every request
// sent reserved and its answer persisted.
func (r *rig) checkBooks(id, job string) *pollwarden.Operation {
	r.t.Helper()
	op := r.get(id)
	n := r.srv.Count(job)
	if n > op.MaxStatusRequests {
		r.t.Errorf("%s: provider saw %d status requests, budget %d", id, n, op.MaxStatusRequests)
	}
	if op.StatusRequestsUsed != n || op.CompletedPolls != n {
		r.t.Errorf("%s: provider saw %d requests; record has %d used, %d completed", id, n, op.StatusRequestsUsed, op.CompletedPolls)
	}
	if m := r.srv.MaxInFlight(job); m > 1 {
		r.t.Errorf("%s: %d requests in flight at once", id, m)
	}
	return op
}

// requestTimes returns the times of every request for the jobs, sorted.
func (r *rig) requestTimes(jobs []string) []time.Time {
	var ts []time.Time
	for _, j := range jobs {
		for _, q := range r.srv.Requests(j) {
			ts = append(ts, q.Time)
		}
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	return ts
}

// maxInWindow is the most requests in any window [t, t+w).
func maxInWindow(ts []time.Time, w time.Duration) int {
	best, j := 0, 0
	for i := range ts {
		for j < len(ts) && ts[j].Before(ts[i].Add(w)) {
			j++
		}
		best = max(best, j-i)
	}
	return best
}

// countBefore counts the times before t.
func countBefore(ts []time.Time, t time.Time) int {
	n, _ := slices.BinarySearchFunc(ts, t, func(a, b time.Time) int { return a.Compare(b) })
	return n
}

// noSchedulerGoroutines fails if a goroutine of the scheduler or of a
// step is still alive. In a synctest bubble it looks only at the
// bubble's goroutines, so bubbled tests can run in parallel.
func noSchedulerGoroutines(t testing.TB) {
	t.Helper()
	var left []string
	for range 100 {
		left = left[:0]
		buf := make([]byte, 4<<20)
		buf = buf[:runtime.Stack(buf, true)]
		goroutines := strings.Split(string(buf), "\n\n")
		mine := bubbleOf(goroutines[0]) // the first is the caller's
		for _, g := range goroutines {
			// The goroutine running this check has no such frame; a Run
			// still running from a test's start() has.
			if bubbleOf(g) != mine {
				continue
			}
			if strings.Contains(g, "pollwarden/scheduler.") || strings.Contains(g, "pollwarden/controller.(*Controller).Step") {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d scheduler goroutines left after Run returned:\n%s", len(left), strings.Join(left, "\n\n"))
}

// logBuffer collects a logger's output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// bubbleOf is the synctest bubble named in a goroutine's stack header
// ("goroutine 21 [chan receive (durable), synctest bubble 1]:"), empty
// outside any bubble.
func bubbleOf(g string) string {
	header, _, _ := strings.Cut(g, "\n")
	_, b, ok := strings.Cut(header, "synctest bubble ")
	if !ok {
		return ""
	}
	return strings.TrimRight(b, "]:")
}
