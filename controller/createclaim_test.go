package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
)

// createClaimStore counts creates, creates with their claim, claims and
// saves.
type createClaimStore struct {
	pollwarden.Store
	creates, createClaims, claims, saves int
}

func (s *createClaimStore) OperationCreateUnder(ctx context.Context, op *pollwarden.Operation, evs []pollwarden.Event, c *pollwarden.StoredContract) error {
	s.creates++
	return s.Store.OperationCreateUnder(ctx, op, evs, c)
}

func (s *createClaimStore) OperationCreateClaim(ctx context.Context, p pollwarden.CreateClaimParams) (*pollwarden.Operation, *pollwarden.Lease, error) {
	s.createClaims++
	return s.Store.OperationCreateClaim(ctx, p)
}

func (s *createClaimStore) OperationClaim(ctx context.Context, p pollwarden.ClaimParams) (*pollwarden.Operation, *pollwarden.Lease, error) {
	s.claims++
	return s.Store.OperationClaim(ctx, p)
}

func (s *createClaimStore) OperationSave(ctx context.Context, p pollwarden.SaveParams) error {
	s.saves++
	return s.Store.OperationSave(ctx, p)
}

func (r *rig) fresh(id, job string) (*pollwarden.Operation, []pollwarden.Event) {
	r.t.Helper()
	op, evs, err := policy.NewOperation(r.ex.Spec(), policy.NewParams{ID: id, ProviderJobID: job, Rand: r.ctl.Factors()}, r.clock.Now())
	if err != nil {
		r.t.Fatal(err)
	}
	return op, evs
}

// A create due at once costs two writes to its first answer: the create
// with its claim, then the answer saved with the release; the request
// leaves only after the first committed, counted in the record created
// (R11), under the limits of that record (R10).
func TestCreateClaimIsOneWriteBeforeTheRequest(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.State("running", nil))
	cs := &createClaimStore{Store: r.store}
	r.ctl.store = cs
	var seen []string
	r.srv.OnRequest(func(string) {
		op, err := r.store.OperationGet(context.Background(), "op1")
		if err != nil {
			seen = append(seen, err.Error())
			return
		}
		seen = append(seen, fmt.Sprintf("used %d of %d, version %d", op.StatusRequestsUsed, op.MaxStatusRequests, op.Version))
	})
	op, evs := r.fresh("op1", "j1")
	if !r.ctl.ClaimsAtCreate(r.ex, op) {
		t.Fatal("a new operation due now: ClaimsAtCreate is false")
	}
	first, err := r.ctl.CreateClaim(context.Background(), r.ex, op, evs)
	if err != nil {
		t.Fatal(err)
	}
	if r.srv.Count("j1") != 0 {
		t.Fatal("the request left before the create returned")
	}
	stored, _ := r.store.OperationGet(context.Background(), "op1")
	if stored.StatusRequestsUsed != 1 || stored.Version != 2 || r.freeAt("op1", r.clock.Now()) {
		t.Fatalf("after the create: used %d version %d, lease free %v; want the reservation and the lease committed",
			stored.StatusRequestsUsed, stored.Version, r.freeAt("op1", r.clock.Now()))
	}
	if op.Version != 1 || first.Op().Version != 1 {
		t.Fatalf("the created record's version %d, the first step's copy %d; want 1", op.Version, first.Op().Version)
	}
	res, err := first.Run(context.Background())
	if err != nil || !res.Sent {
		t.Fatalf("first step: sent %v, %v", res.Sent, err)
	}
	if want := []string{"used 1 of 12, version 2"}; !slices.Equal(seen, want) {
		t.Fatalf("the store as the provider saw it during the request: %v, want %v", seen, want)
	}
	if cs.createClaims != 1 || cs.creates != 0 || cs.claims != 0 || cs.saves != 1 {
		t.Fatalf("writes: %d create-claims, %d creates, %d claims, %d saves; want 1 create-claim and 1 save",
			cs.createClaims, cs.creates, cs.claims, cs.saves)
	}
	if !r.freeAt("op1", r.clock.Now()) {
		t.Fatal("the lease is still held after the first step")
	}
	var kinds []pollwarden.EventKind
	stored, _ = r.store.OperationGet(context.Background(), "op1")
	all, _ := r.store.EventList(context.Background(), "op1")
	for _, e := range all {
		kinds = append(kinds, e.Kind)
	}
	if want := []pollwarden.EventKind{pollwarden.EventSubmitted, pollwarden.EventRequestSent, pollwarden.EventResponseReceived,
		pollwarden.EventStateChanged}; !slices.Equal(kinds, want) {
		t.Fatalf("events: %v, want %v", kinds, want)
	}
	if stored.ContractFingerprint == "" {
		t.Fatal("the operation was created without its contract's fingerprint")
	}
	if _, err := r.store.ContractGet(context.Background(), stored.ContractFingerprint); err != nil {
		t.Fatalf("the contract was not kept with the create: %v", err)
	}
}

// A first step never run (the process died after the commit) leaves a
// reservation counted and a lease that expires; the next step, after
// it, sends once: never a request the store did not count (R11).
func TestCreateClaimNeverRunLeavesAnExpiringLease(t *testing.T) {
	r := newRig(t, "")
	r.srv.Script("j1", fp.State("running", nil))
	op, evs := r.fresh("op1", "j1")
	if _, err := r.ctl.CreateClaim(context.Background(), r.ex, op, evs); err != nil {
		t.Fatal(err)
	}
	other := r.controller("owner-b")
	if res, err := other.Step(context.Background(), r.ex, "op1"); err != nil || res.Sent {
		t.Fatalf("a step while the create's lease is held: sent %v, %v; want nothing sent", res.Sent, err)
	}
	r.clock.Advance(r.ctl.leaseTTL(r.ex.Spec()))
	res, err := other.Step(context.Background(), r.ex, "op1")
	if err != nil || !res.Sent || r.srv.Count("j1") != 1 {
		t.Fatalf("the step after the lease expired: sent %v, provider saw %d, %v", res.Sent, r.srv.Count("j1"), err)
	}
	if got, _ := r.store.OperationGet(context.Background(), "op1"); got.StatusRequestsUsed != 2 {
		t.Fatalf("used %d: the unused reservation and the request sent, want 2", got.StatusRequestsUsed)
	}
}

// A taken id fails the create with its claim as it fails a create:
// ErrExists, nothing written.
func TestCreateClaimTakenIDWritesNothing(t *testing.T) {
	r := newRig(t, "")
	r.submit("op1", "j1", policy.NewParams{})
	op, evs := r.fresh("op1", "j2")
	if _, err := r.ctl.CreateClaim(context.Background(), r.ex, op, evs); !errors.Is(err, pollwarden.ErrExists) {
		t.Fatalf("create with claim of a taken id: %v, want ErrExists", err)
	}
	if got, _ := r.store.OperationGet(context.Background(), "op1"); got.Version != 1 || got.StatusRequestsUsed != 0 {
		t.Fatalf("the taken record changed: version %d used %d", got.Version, got.StatusRequestsUsed)
	}
}

// A contract with provider callbacks, or a first poll later, keeps the
// create apart from its first step.
func TestClaimsAtCreateOnlyWhenDueAtOnce(t *testing.T) {
	r := newRig(t, "")
	op, _ := r.fresh("op1", "j1")
	op.NextPollAt = r.clock.Now().Add(time.Minute)
	if r.ctl.ClaimsAtCreate(r.ex, op) {
		t.Fatal("ClaimsAtCreate for an operation due in a minute")
	}
}
