package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/postgres"
	"github.com/pollwarden/pollwarden/prober"
)

// skewClock is a replica's own clock: it moves only when the test moves
// it, so two replicas can be kept a fixed distance apart.
type skewClock struct {
	pollwarden.WallTimers
	mu  sync.Mutex
	now time.Time
}

func (c *skewClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *skewClock) Sleep(ctx context.Context, d time.Duration) error {
	c.Advance(d)
	return ctx.Err()
}
func (c *skewClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

const skewToken = "sk-skew-test"

// skewReplica is one pollwarden replica: its own pool on the shared
// schema, its own clock, its own controller.
type skewReplica struct {
	clock *skewClock
	ctl   *controller.Controller
}

func newSkewReplica(t *testing.T, schema, owner string, now time.Time) *skewReplica {
	t.Helper()
	st := openIn(t, schema, postgres.Options{})
	t.Cleanup(func() { st.Close() })
	clock := &skewClock{now: now}
	getenv := func(k string) (string, bool) { return skewToken, k == "SKEW_TOKEN" }
	ctl := controller.New(controller.Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)), Owner: owner,
		Prober: prober.New(prober.Options{Now: clock.Now, Getenv: getenv})})
	return &skewReplica{clock: clock, ctl: ctl}
}

// skewContract has a lease of 2*timeout+5s = 9s, far less than the skew.
func skewContract(t *testing.T, base string) *contract.Loaded {
	t.Helper()
	c, err := contract.Parse(fmt.Appendf(nil, `version: 1
name: skew-test
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:SKEW_TOKEN"}
  timeout: 2s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
backoff: {base: 5s, max: 30s}
limits: {deadline: 40m, max_status_requests: 12, max_transport_failures: 3, max_rate_limited: 3}
`, base))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// TestSkewedReplicasNeverOverlap: two replicas on one schema whose clocks
// are 60 s apart (more than six leases) step the same operations. The
// replica ahead must not take a lease the other holds: the provider never
// sees two requests for one job at once, and no job gets more requests
// than its budget.
func TestSkewedReplicasNeverOverlap(t *testing.T) {
	schema := freshSchema(t)
	srv := fp.New()
	t.Cleanup(srv.Close)
	srv.RequireToken(skewToken)
	ex := skewContract(t, srv.URL())
	base := time.Now().UTC()
	behind := newSkewReplica(t, schema, "replica-behind", base)
	ahead := newSkewReplica(t, schema, "replica-ahead", base.Add(60*time.Second))
	ctx := t.Context()

	// First, deterministically: the replica behind holds its request in
	// flight at the provider while the one ahead steps the same operation.
	srv.Script("held", fp.State("running", nil))
	if _, err := behind.ctl.Start(ctx, ex, policy.NewParams{ID: "op-held", ProviderJobID: "held"}); err != nil {
		t.Fatal(err)
	}
	inFlight, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv.OnRequest(func(string) {
		first := false
		once.Do(func() { first = true })
		if first {
			close(inFlight)
			<-release
		}
	})
	done := make(chan error, 1)
	go func() {
		_, err := behind.ctl.Step(ctx, ex, "op-held")
		done <- err
	}()
	select {
	case <-inFlight:
	case err := <-done:
		t.Fatalf("the replica behind finished its step without reaching the provider: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the replica behind never reached the provider")
	}
	res, aheadErr := ahead.ctl.Step(ctx, ex, "op-held")
	close(release)
	behindErr := <-done
	srv.OnRequest(nil)
	if res.Sent || srv.MaxInFlight("held") != 1 || srv.Count("held") != 1 {
		t.Fatalf("the replica 60 s ahead took a held lease: it sent %v; the provider saw %d requests, %d at once (the holder's step: %v)",
			res.Sent, srv.Count("held"), srv.MaxInFlight("held"), behindErr)
	}
	if aheadErr != nil || behindErr != nil {
		t.Fatalf("steps: ahead %v, behind %v", aheadErr, behindErr)
	}

	// Then both replicas step the same operations side by side, each on its
	// own clock, until every budget is spent.
	const ops = 3
	for i := range ops {
		job := fmt.Sprintf("job-%d", i)
		srv.Script(job, fp.Step{JSON: map[string]any{"state": "running"}, Delay: 20 * time.Millisecond})
		if _, err := behind.ctl.Start(ctx, ex, policy.NewParams{ID: "op-" + job, ProviderJobID: job}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, r := range []*skewReplica{behind, ahead} {
		wg.Go(func() {
			for range 100 {
				for i := range ops {
					if _, err := r.ctl.Step(ctx, ex, fmt.Sprintf("op-job-%d", i)); err != nil {
						t.Errorf("step: %v", err)
						return
					}
				}
				r.clock.Advance(5 * time.Second)
			}
		})
	}
	wg.Wait()
	for i := range ops {
		job := fmt.Sprintf("job-%d", i)
		op, err := behind.ctl.Store().OperationGet(ctx, "op-"+job)
		if err != nil {
			t.Fatal(err)
		}
		n, peak := srv.Count(job), srv.MaxInFlight(job)
		if peak != 1 || n > op.MaxStatusRequests || n > op.StatusRequestsUsed {
			t.Errorf("%s: the provider saw %d requests, %d at once; the record counts %d of %d",
				job, n, peak, op.StatusRequestsUsed, op.MaxStatusRequests)
		}
		if op.Phase != pollwarden.PhaseEscalated || op.Reason != pollwarden.ReasonRequestBudgetExhausted {
			t.Errorf("%s ended %s/%s, want escalated on its spent budget", job, op.Phase, op.Reason)
		}
	}
}
