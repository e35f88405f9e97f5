package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// fakeClock advances only when slept on, so minutes of waiting take no
// time while the provider is still real HTTP on loopback.
type fakeClock struct {
	pollwarden.WallTimers
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}
func (c *fakeClock) Advance(d time.Duration) { c.Sleep(context.Background(), d) }

const testToken = "sk-canary-controller-test"

func contractYAML(base string, extra string) string {
	return fmt.Sprintf(`version: 1
name: ctl-test
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:CTL_TOKEN"}
  timeout: 2s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed], cancelled: [cancelled], expired: [expired]}
result: {require: [{path: result.url, kind: url}], error_path: error}
hints: {poll_after_seconds: poll_after_seconds}
backoff: {base: BACKOFF_BASE, max: 120s}
limits: {deadline: 40m, max_status_requests: 12, max_transport_failures: 3, max_rate_limited: 3}
escalation: {extension: {time: 15m, status_requests: 4}}
%s`, base, strings.ReplaceAll(extra, "BASE", base))
}

// rigWith builds a rig whose contract uses backoff base b.
func rigWith(t *testing.T, b, extra string) *rig {
	return newRigBackoff(t, b, extra)
}

type rig struct {
	t     *testing.T
	srv   *fp.Server
	store *sqlite.Store
	clock *fakeClock
	ex    *contract.Loaded
	ctl   *Controller
}

func newRig(t *testing.T, extra string) *rig { return newRigBackoff(t, "5s", extra) }

func newRigBackoff(t *testing.T, backoff, extra string) *rig {
	t.Helper()
	srv := fp.New()
	t.Cleanup(srv.Close)
	srv.RequireToken(testToken)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := contract.Parse([]byte(strings.Replace(contractYAML(srv.URL(), extra), "BACKOFF_BASE", backoff, 1)))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Date(2025, 4, 18, 10, 20, 0, 0, time.UTC)}
	r := &rig{t: t, srv: srv, store: st, clock: clock, ex: ex}
	r.ctl = r.controller("owner-a")
	return r
}

func (r *rig) controller(owner string) *Controller {
	getenv := func(k string) (string, bool) { return testToken, k == "CTL_TOKEN" }
	return New(Options{Store: r.store, Clock: r.clock, Rand: rand.New(rand.NewPCG(1, 2)), Owner: owner,
		Prober: prober.New(prober.Options{Now: r.clock.Now, Getenv: getenv})})
}

func (r *rig) submit(id, job string, p policy.NewParams) *pollwarden.Operation {
	r.t.Helper()
	p.ID, p.ProviderJobID = id, job
	op, err := r.ctl.Start(context.Background(), r.ex, p)
	if err != nil {
		r.t.Fatal(err)
	}
	return op
}

func (r *rig) wait(id string) *pollwarden.Operation {
	r.t.Helper()
	op, err := r.ctl.Wait(context.Background(), r.ex, id, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	return op
}

func TestWaitSucceedsAndRecordsTheStory(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.State("queued", nil), fp.State("running", nil), fp.Succeeded("https://results.example.com/r.csv"))
	r.submit("op1", "j1", policy.NewParams{})
	op := r.wait("op1")
	if op.Phase != pollwarden.PhaseSucceeded || r.srv.Count("j1") != 3 || op.StatusRequestsUsed != 3 {
		t.Fatalf("phase %s, provider saw %d, recorded %d", op.Phase, r.srv.Count("j1"), op.StatusRequestsUsed)
	}
	events, err := r.store.EventList(context.Background(), "op1")
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, e := range events {
		if e.Kind == pollwarden.EventRequestSent {
			sent++
		}
	}
	if sent != 3 {
		t.Fatalf("R24: %d status_request_sent events for 3 requests", sent)
	}
}

func TestR11_ReservationIsPersistedBeforeTheRequest(t *testing.T) {
	r := newRig(t, "")
	var seen []int
	// A provider that looks at the store while answering: the request it is
	// serving must already be counted there.
	r.srv.Script("j1", fp.State("running", nil), fp.State("running", nil), fp.Succeeded("https://r.example.com/x"))
	r.srv.OnRequest(func(jobID string) {
		op, err := r.store.OperationGet(context.Background(), "op1")
		if err == nil {
			seen = append(seen, op.StatusRequestsUsed)
		}
	})
	r.submit("op1", "j1", policy.NewParams{})
	r.wait("op1")
	if fmt.Sprint(seen) != "[1 2 3]" {
		t.Fatalf("stored counts seen by the provider during requests 1..3: %v, want [1 2 3]", seen)
	}
}

func TestR22_NoRequestWhileAnotherOwnerHoldsTheLease(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{})
	ctx := context.Background()
	l, err := r.store.LeaseAcquire(ctx, pollwarden.LeaseParams{OperationID: "op1", Owner: "other", Now: r.clock.Now(), TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.ctl.Step(ctx, r.ex, "op1")
	if err != nil || res.Sent || r.srv.Count("j1") != 0 {
		t.Fatalf("step under another's lease: sent %v, provider saw %d, err %v", res.Sent, r.srv.Count("j1"), err)
	}
	// The other owner finishes the job; after its release we reload and
	// find nothing to do.
	op, _ := r.store.OperationGet(ctx, "op1")
	op.Phase = pollwarden.PhaseSucceeded
	if err := r.store.OperationSave(ctx, pollwarden.SaveParams{Op: op, Lease: l, Now: r.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	r.store.LeaseRelease(ctx, l)
	res, err = r.ctl.Step(ctx, r.ex, "op1")
	if err != nil || res.Sent || r.srv.Count("j1") != 0 || res.Op.Phase != pollwarden.PhaseSucceeded {
		t.Fatalf("after the other owner finished: sent %v, provider saw %d, phase %s, err %v", res.Sent, r.srv.Count("j1"), res.Op.Phase, err)
	}
}

func TestR22_ConcurrentControllersNeverOverlap(t *testing.T) {
	// Real time here: a shared fake clock advanced by four sleepers would
	// expire leases mid-request, which real time does not do.
	r := rigWith(t, "10ms", "")
	r.clock.now = time.Now()
	r.srv.Script("j1", fp.Step{JSON: map[string]any{"state": "running"}, Delay: 20 * time.Millisecond})
	r.submit("op1", "j1", policy.NewParams{MaxStatusRequests: 6})
	var wg sync.WaitGroup
	for i := range 4 {
		ctl := r.controller(fmt.Sprintf("owner-%d", i))
		ctl.clock = pollwarden.RealClock{}
		ctl.prober = prober.New(prober.Options{Now: time.Now, Getenv: func(k string) (string, bool) { return testToken, true }})
		wg.Go(func() {
			if _, err := ctl.Wait(context.Background(), r.ex, "op1", nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := r.srv.Count("j1"); n != 6 || r.srv.MaxInFlight("j1") != 1 {
		t.Fatalf("provider saw %d requests (budget 6), at most %d in flight", n, r.srv.MaxInFlight("j1"))
	}
}

// TestR9_LateWakeUpSendsOneRequest: after a long sleep the first step
// sends nothing but saves the spread time policy.Gate chose; at that time
// one request goes, and no further step makes up the missed intervals.
func TestR9_LateWakeUpSendsOneRequest(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{})
	ctx := context.Background()
	if res, err := r.ctl.Step(ctx, r.ex, "op1"); err != nil || !res.Sent {
		t.Fatalf("first step: %v %v", res.Sent, err)
	}
	r.clock.Advance(30 * time.Minute) // the laptop slept through many intervals
	res, err := r.ctl.Step(ctx, r.ex, "op1")
	if err != nil || res.Sent || !res.Until.After(r.clock.Now()) {
		t.Fatalf("late wake-up: sent %v until %s, err %v; want the request spread to a later time", res.Sent, res.Until, err)
	}
	stored, err := r.ctl.Store().OperationGet(ctx, "op1")
	if err != nil || !stored.NextPollSpread || !stored.NextPollAt.Equal(res.Until) {
		t.Fatalf("stored next poll %s (spread %v), want the spread time %s saved", stored.NextPollAt, stored.NextPollSpread, res.Until)
	}
	r.clock.Advance(res.Until.Sub(r.clock.Now()) + time.Minute) // late again: still one request
	for i := range 5 {
		res, err := r.ctl.Step(ctx, r.ex, "op1")
		if err != nil {
			t.Fatal(err)
		}
		if (i == 0) != res.Sent {
			t.Fatalf("step %d after the spread time: sent %v until %s phase %s %s (now %s)", i+1, res.Sent, res.Until, res.Op.Phase, res.Op.Reason, r.clock.Now())
		}
	}
	if n := r.srv.Count("j1"); n != 2 {
		t.Fatalf("provider saw %d requests, want 2 (no burst)", n)
	}
}

func TestR20_ExtensionByApproverResumesWithoutResettingCounters(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{MaxStatusRequests: 2})
	op := r.wait("op1")
	if op.Reason != pollwarden.ReasonRequestBudgetExhausted {
		t.Fatalf("reason %s", op.Reason)
	}
	ctx := context.Background()
	agent := pollwarden.Actor{Name: "bot", Role: pollwarden.RoleAgent}
	if _, err := r.ctl.Decide(ctx, r.ex, "op1", policy.DecisionParams{Option: pollwarden.OptionExtend, Actor: agent}); !errors.Is(err, pollwarden.ErrForbidden) {
		t.Fatalf("agent extension: %v, want ErrForbidden", err)
	}
	alice := pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
	if _, err := r.ctl.Decide(ctx, r.ex, "op1", policy.DecisionParams{Option: pollwarden.OptionExtend, Actor: alice}); err != nil {
		t.Fatal(err)
	}
	op = r.wait("op1")
	if op.StatusRequestsUsed != 6 || op.MaxStatusRequests != 6 || r.srv.Count("j1") != 6 {
		t.Fatalf("after extension: used %d of %d, provider saw %d; want 6 of 6", op.StatusRequestsUsed, op.MaxStatusRequests, r.srv.Count("j1"))
	}
}

func TestR23_CancelIsItsOwnRecordedAction(t *testing.T) {
	r := newRig(t, "cancel: {url: \"BASE/jobs/{job_id}/cancel\"}\n")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{MaxStatusRequests: 1})
	r.wait("op1")
	alice := pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
	op, err := r.ctl.Decide(context.Background(), r.ex, "op1", policy.DecisionParams{Option: pollwarden.OptionCancel, Actor: alice})
	if err != nil {
		t.Fatal(err)
	}
	if op.Phase != pollwarden.PhaseCancelled || r.srv.Cancels("j1") != 1 || r.srv.Count("j1") != 1 {
		t.Fatalf("phase %s, cancels %d, status requests %d", op.Phase, r.srv.Cancels("j1"), r.srv.Count("j1"))
	}
	events, _ := r.store.EventList(context.Background(), "op1")
	var kinds []pollwarden.EventKind
	for _, e := range events[len(events)-4:] {
		kinds = append(kinds, e.Kind)
	}
	action := events[len(events)-3]
	if fmt.Sprint(kinds) != "[decision action state_changed finished]" || action.Data.Option != pollwarden.OptionCancel || action.Data.HTTPStatus != 200 {
		t.Fatalf("last events %v (%+v), want the decision, the cancel action, then the provider's cancelled state", kinds, action)
	}
}

// TestCreateTakenIDWritesNothing: Create never resumes or judges a taken
// id (package operations' resume.go is the one matcher): it answers
// ErrExists and leaves the stored record and its story as they were,
// whether the request matches or not.
func TestCreateTakenIDWritesNothing(t *testing.T) {
	r := newRig(t, "")
	ctx := context.Background()
	first, err := r.ctl.Start(ctx, r.ex, policy.NewParams{ID: "op1", ProviderJobID: "j1"})
	if err != nil || first.Version != 1 {
		t.Fatalf("first: %+v, %v", first, err)
	}
	before, _ := r.store.EventList(ctx, "op1")
	for _, job := range []string{"j1", "j2"} {
		fresh, events, err := policy.NewOperation(r.ex.Spec(), policy.NewParams{ID: "op1", ProviderJobID: job}, r.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := r.ctl.Create(ctx, r.ex, fresh, events); !errors.Is(err, pollwarden.ErrExists) {
			t.Fatalf("job %s under a taken id: %v, want ErrExists", job, err)
		}
	}
	op, err := r.store.OperationGet(ctx, "op1")
	after, _ := r.store.EventList(ctx, "op1")
	if err != nil || op.ProviderJobID != "j1" || op.Version != first.Version || len(after) != len(before) {
		t.Fatalf("stored %+v (%v), %d events, want job j1 at version %d with %d events", op, err, len(after), first.Version, len(before))
	}
}

// racingStore lets another owner finish the job between our first load and
// our claim of the lease.
type racingStore struct {
	pollwarden.Store
	beforeAcquire func()
}

func (s *racingStore) OperationClaim(ctx context.Context, p pollwarden.ClaimParams) (*pollwarden.Operation, *pollwarden.Lease, error) {
	if f := s.beforeAcquire; f != nil {
		s.beforeAcquire = nil
		f()
	}
	return s.Store.OperationClaim(ctx, p)
}

func TestR22_ReloadAfterAcquiringTheLease(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{})
	ctx := context.Background()
	rs := &racingStore{Store: r.store}
	rs.beforeAcquire = func() {
		op, _ := r.store.OperationGet(ctx, "op1")
		op.Phase = pollwarden.PhaseSucceeded
		if err := r.store.OperationSave(ctx, pollwarden.SaveParams{Op: op, Now: r.clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	ctl := r.controller("owner-b")
	ctl.store = rs
	res, err := ctl.Step(ctx, r.ex, "op1")
	if err != nil || res.Sent || r.srv.Count("j1") != 0 || res.Op.Phase != pollwarden.PhaseSucceeded {
		t.Fatalf("stale owner: sent %v, provider saw %d, phase %v, err %v", res.Sent, r.srv.Count("j1"), res.Op, err)
	}
}

func TestOnChangeSeesEverySavedChange(t *testing.T) {
	r := newRig(t, "")
	var phases []pollwarden.Phase
	ctl := r.controller("watcher")
	ctl.onChange = func(op *pollwarden.Operation) { phases = append(phases, op.Phase) }
	r.ctl = ctl
	r.srv.Script("j1", fp.State("running", nil), fp.Succeeded("https://r.example.com/x"))
	r.submit("op1", "j1", policy.NewParams{})
	r.wait("op1")
	// create, then per request: reserve and decision.
	if len(phases) != 5 || phases[0] != pollwarden.PhaseWaiting || phases[4] != pollwarden.PhaseSucceeded {
		t.Fatalf("changes seen: %v", phases)
	}
}

// slowReserveStore makes the reservation's write take time on the clock,
// as a write queued behind other replicas does.
type slowReserveStore struct {
	pollwarden.Store
	clock *fakeClock
	delay time.Duration
}

func (s *slowReserveStore) OperationClaim(ctx context.Context, p pollwarden.ClaimParams) (*pollwarden.Operation, *pollwarden.Lease, error) {
	op, l, err := s.Store.OperationClaim(ctx, p)
	if l != nil {
		s.clock.Advance(s.delay)
	}
	return op, l, err
}

func TestR11_NoRequestWhenTheDeadlinePassesDuringTheReservation(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{Deadline: r.clock.Now().Add(time.Second)})
	ctl := r.controller("slow")
	ctl.store = &slowReserveStore{Store: r.store, clock: r.clock, delay: 2 * time.Second}
	res, err := ctl.Step(context.Background(), r.ex, "op1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent || r.srv.Count("j1") != 0 || res.Op.Reason != pollwarden.ReasonDeadlineExceeded || res.Op.StatusRequestsUsed != 1 {
		t.Fatalf("sent %v, provider saw %d, reason %s, used %d", res.Sent, r.srv.Count("j1"), res.Op.Reason, res.Op.StatusRequestsUsed)
	}
}

func TestDecisionWaitsForAStepStillHoldingTheLease(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{MaxStatusRequests: 1})
	r.wait("op1")
	ctx := context.Background()
	// The step that escalated has not released its lease yet.
	if _, err := r.store.LeaseAcquire(ctx, pollwarden.LeaseParams{OperationID: "op1", Owner: "stepper", Now: r.clock.Now(), TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	alice := pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
	op, err := r.ctl.Decide(ctx, r.ex, "op1", policy.DecisionParams{Option: pollwarden.OptionExtend, Actor: alice})
	if err != nil || op.Phase != pollwarden.PhaseWaiting {
		t.Fatalf("decision under a held lease: %v, %v", op, err)
	}
}

// TestSubmittedFactorsCoverTheRangeEvenly: the operations one controller
// creates take their jitter factors from its sequence
// (policy.FactorSequence), so 200 of them fill each tenth of R5's range
// (in log scale) with 20 ± 2, where independent draws would stray by
// about four.
func TestSubmittedFactorsCoverTheRangeEvenly(t *testing.T) {
	r := newRig(t, "")
	var bins [10]int
	for i := range 200 {
		op := r.submit(fmt.Sprintf("op-%d", i), fmt.Sprintf("job-%d", i), policy.NewParams{})
		bins[int(10*math.Log2(op.JitterFactor/policy.FactorMin))]++
	}
	for i, c := range bins {
		if c < 18 || c > 22 {
			t.Errorf("tenth %d of the factor range holds %d of 200 operations, want 20 ± 2", i, c)
		}
	}
}
