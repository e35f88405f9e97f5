package controller

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
)

// countingStore counts the store calls a step makes and can fail the next
// saves with an error that is not about the lease.
type countingStore struct {
	pollwarden.Store
	mu                                   sync.Mutex
	gets, claims, saves, releasing, rels int
	failSaves                            int
}

var errDisk = errors.New("disk full")

func (s *countingStore) OperationGet(ctx context.Context, id string) (*pollwarden.Operation, error) {
	s.mu.Lock()
	s.gets++
	s.mu.Unlock()
	return s.Store.OperationGet(ctx, id)
}

func (s *countingStore) OperationClaim(ctx context.Context, p pollwarden.ClaimParams) (*pollwarden.Operation, *pollwarden.Lease, error) {
	s.mu.Lock()
	s.claims++
	s.mu.Unlock()
	return s.Store.OperationClaim(ctx, p)
}

func (s *countingStore) OperationSave(ctx context.Context, p pollwarden.SaveParams) error {
	s.mu.Lock()
	s.saves++
	if p.Release {
		s.releasing++
	}
	fail := s.failSaves > 0
	if fail {
		s.failSaves--
	}
	s.mu.Unlock()
	if fail {
		return errDisk
	}
	return s.Store.OperationSave(ctx, p)
}

func (s *countingStore) LeaseRelease(ctx context.Context, l *pollwarden.Lease) error {
	s.mu.Lock()
	s.rels++
	s.mu.Unlock()
	return s.Store.LeaseRelease(ctx, l)
}

// freeAt reports whether another owner could take op's lease at now.
func (r *rig) freeAt(id string, now time.Time) bool {
	l, err := r.store.LeaseAcquire(context.Background(), pollwarden.LeaseParams{OperationID: id, Owner: "probe", Now: now, TTL: time.Second})
	if err != nil {
		return false
	}
	_ = r.store.LeaseRelease(context.Background(), l)
	return true
}

func TestStepIsTwoWrites(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{})
	cs := &countingStore{Store: r.store}
	ctl := r.controller("owner-b")
	ctl.store = cs
	res, err := ctl.Step(context.Background(), r.ex, "op1")
	if err != nil || !res.Sent {
		t.Fatalf("step: sent %v, %v", res.Sent, err)
	}
	if cs.claims != 1 || cs.saves != 1 || cs.releasing != 1 || cs.rels != 0 {
		t.Fatalf("writes of one step: %d claims, %d saves (%d releasing), %d releases; want 1 claim and 1 releasing save",
			cs.claims, cs.saves, cs.releasing, cs.rels)
	}
	if !r.freeAt("op1", r.clock.Now()) {
		t.Fatal("the lease is still held after the step")
	}
	// R11: the claim persisted the reservation, the decision was saved
	// after it (R24: with the state change it saw).
	var kinds []pollwarden.EventKind
	evs, _ := r.store.EventList(context.Background(), "op1")
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if want := []pollwarden.EventKind{pollwarden.EventSubmitted, pollwarden.EventRequestSent, pollwarden.EventResponseReceived,
		pollwarden.EventStateChanged}; !slices.Equal(kinds, want) {
		t.Fatalf("events after one step: %v, want %v", kinds, want)
	}
}

func TestStepFreesTheLeaseWhenTheDecisionCannotBeSaved(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{})
	cs := &countingStore{Store: r.store, failSaves: 1}
	ctl := r.controller("owner-b")
	ctl.store = cs
	if _, err := ctl.Step(context.Background(), r.ex, "op1"); !errors.Is(err, errDisk) {
		t.Fatalf("step whose decision save failed: %v, want the store's error", err)
	}
	if cs.rels != 1 || !r.freeAt("op1", r.clock.Now()) {
		t.Fatalf("after a failed decision save: %d releases, lease free %v; want it released", cs.rels, r.freeAt("op1", r.clock.Now()))
	}
	// The reservation stays counted (R11).
	if op, _ := r.store.OperationGet(context.Background(), "op1"); op.StatusRequestsUsed != 1 {
		t.Fatalf("used %d after a sent request whose answer was lost, want 1", op.StatusRequestsUsed)
	}
}

func TestStepFromAStaleCopySendsOnlyWhatTheStoreAllows(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.State("running", nil))
	r.submit("op1", "j1", policy.NewParams{})
	ctx := context.Background()
	stale, _ := r.store.OperationGet(ctx, "op1")
	// Another owner finishes the job after our copy was read.
	done := stale.Clone()
	done.Phase = pollwarden.PhaseSucceeded
	if err := r.store.OperationSave(ctx, pollwarden.SaveParams{Op: done, Now: r.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: r.store}
	ctl := r.controller("owner-b")
	ctl.store = cs
	res, err := ctl.StepFrom(ctx, r.ex, stale)
	if err != nil || res.Sent || r.srv.Count("j1") != 0 || res.Op.Phase != pollwarden.PhaseSucceeded {
		t.Fatalf("step from a stale copy: sent %v, provider saw %d, result %+v, %v", res.Sent, r.srv.Count("j1"), res.Op, err)
	}
	if cs.gets != 0 || cs.saves != 0 {
		t.Fatalf("step from a copy: %d reads, %d saves; want none (the claim reads)", cs.gets, cs.saves)
	}
	if !r.freeAt("op1", r.clock.Now()) {
		t.Fatal("a claim that reserved nothing left the lease taken")
	}
	// A copy that is merely one version behind still steps.
	r.submit("op2", "j1", policy.NewParams{})
	old, _ := r.store.OperationGet(ctx, "op2")
	newer := old.Clone()
	newer.LastState = "queued"
	if err := r.store.OperationSave(ctx, pollwarden.SaveParams{Op: newer, Now: r.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	res, err = ctl.StepFrom(ctx, r.ex, old)
	if err != nil || !res.Sent || res.Op.StatusRequestsUsed != 1 || res.Op.Version != newer.Version+2 {
		t.Fatalf("step from a copy one version behind: sent %v, %+v, %v", res.Sent, res.Op, err)
	}
}
