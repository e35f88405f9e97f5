package controller

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
)

// manyStore is a countingStore that also claims many at once, counting
// those calls and their sizes.
type manyStore struct {
	*countingStore
	calls [][]string
}

func (s *manyStore) OperationClaimMany(ctx context.Context, ps []pollwarden.ClaimParams) []pollwarden.ClaimResult {
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.OperationID)
	}
	s.mu.Lock()
	s.calls = append(s.calls, ids)
	s.mu.Unlock()
	return s.Store.(pollwarden.ManyClaimer).OperationClaimMany(ctx, ps)
}

// runRests calls every rest at once, as a scheduler does, and returns
// the results by index.
func runRests(t *testing.T, rests []func() (StepResult, error)) []StepResult {
	t.Helper()
	out := make([]StepResult, len(rests))
	var wg sync.WaitGroup
	for i, rest := range rests {
		wg.Go(func() {
			res, err := rest()
			if err != nil {
				t.Errorf("step %d: %v", i, err)
			}
			out[i] = res
		})
	}
	wg.Wait()
	return out
}

// StepsFrom claims the steps that may send in one store call, each
// decided as a single step's claim is: the free ones reserve, send and
// are recorded with their leases freed (R11, R22), one whose lease
// another owner holds waits for leaseRetry without a request, and one
// whose checks stop it first (finished) is stepped whole, without a
// claim.
func TestStepsFromClaimsTogether(t *testing.T) {
	r := newRig(t, "")
	ctx := context.Background()
	ids := []string{"op1", "op2", "op3", "op4", "op5"}
	var starts []StepStart
	for _, id := range ids {
		r.srv.Script("j-"+id, fp.State("running", nil))
		starts = append(starts, StepStart{Ctx: ctx, Ex: r.ex, Op: r.submit(id, "j-"+id, policy.NewParams{})})
	}
	if _, err := r.store.LeaseAcquire(ctx, pollwarden.LeaseParams{OperationID: "op4", Owner: "other", Now: r.clock.Now(), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	done := starts[4].Op.Clone()
	done.Phase = pollwarden.PhaseSucceeded
	if err := r.store.OperationSave(ctx, pollwarden.SaveParams{Op: done, Now: r.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	starts[4].Op = get(t, r, "op5")
	ms := &manyStore{countingStore: &countingStore{Store: r.store}}
	ctl := r.controller("owner-b")
	ctl.store = ms
	res := runRests(t, ctl.StepsFrom(ctx, starts))
	if want := [][]string{{"op1", "op2", "op3", "op4"}}; !slices.EqualFunc(ms.calls, want, slices.Equal) {
		t.Fatalf("claims made together: %v, want %v", ms.calls, want)
	}
	if ms.claims != 0 || ms.releasing != 3 || ms.rels != 0 {
		t.Fatalf("single claims %d, releasing saves %d, releases %d; want 0, 3, 0", ms.claims, ms.releasing, ms.rels)
	}
	for _, id := range ids[:3] {
		i := slices.Index(ids, id)
		if !res[i].Sent || res[i].Op.StatusRequestsUsed != 1 || r.srv.Count("j-"+id) != 1 {
			t.Fatalf("%s: sent %v, %+v, provider saw %d", id, res[i].Sent, res[i].Op, r.srv.Count("j-"+id))
		}
		if !r.freeAt(id, r.clock.Now()) {
			t.Fatalf("%s: the lease is still held after the step", id)
		}
		var kinds []pollwarden.EventKind
		evs, _ := r.store.EventList(ctx, id)
		for _, e := range evs {
			kinds = append(kinds, e.Kind)
		}
		if want := []pollwarden.EventKind{pollwarden.EventSubmitted, pollwarden.EventRequestSent, pollwarden.EventResponseReceived,
			pollwarden.EventStateChanged}; !slices.Equal(kinds, want) {
			t.Fatalf("%s: events %v, want %v", id, kinds, want)
		}
	}
	if res[3].Sent || r.srv.Count("j-op4") != 0 || !res[3].Until.Equal(r.clock.Now().Add(ctl.leaseRetry)) {
		t.Fatalf("step of a held lease: sent %v, until %s, provider saw %d", res[3].Sent, res[3].Until, r.srv.Count("j-op4"))
	}
	if res[4].Sent || res[4].Op.Phase != pollwarden.PhaseSucceeded || r.srv.Count("j-op5") != 0 {
		t.Fatalf("step of a finished operation: %+v", res[4])
	}
}

// Without a store that claims many at once, StepsFrom steps each
// operation whole: one claim each.
func TestStepsFromOneByOneWithoutManyClaimer(t *testing.T) {
	r := newRig(t, "")
	ctx := context.Background()
	var starts []StepStart
	for _, id := range []string{"op1", "op2"} {
		r.srv.Script("j-"+id, fp.State("running", nil))
		starts = append(starts, StepStart{Ctx: ctx, Ex: r.ex, Op: r.submit(id, "j-"+id, policy.NewParams{})})
	}
	cs := &countingStore{Store: r.store}
	ctl := r.controller("owner-b")
	ctl.store = cs
	for i, res := range runRests(t, ctl.StepsFrom(ctx, starts)) {
		if !res.Sent {
			t.Fatalf("step %d sent nothing", i)
		}
	}
	if cs.claims != 2 || cs.releasing != 2 {
		t.Fatalf("%d claims, %d releasing saves; want 2 and 2", cs.claims, cs.releasing)
	}
}

func get(t *testing.T, r *rig, id string) *pollwarden.Operation {
	t.Helper()
	op, err := r.store.OperationGet(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return op
}
