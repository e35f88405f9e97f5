package sqlite_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/sqlite"
)

// queueBehind starts each of fns while the writer slot is held, waits
// until all are queued, lets them go and returns their results in order:
// the claims and saves among them are then committed as one group (the
// first, taken before the others queued, in a group of its own).
func queueBehind(t *testing.T, s *sqlite.Store, fns ...func() error) []error {
	t.Helper()
	release := sqlite.HoldWrites(s)
	results := make([]chan error, len(fns))
	for i, fn := range fns {
		results[i] = make(chan error, 1)
		go func() { results[i] <- fn() }()
		for sqlite.PendingWrites(s) < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	release()
	errs := make([]error, len(fns))
	for i := range fns {
		errs[i] = <-results[i]
	}
	return errs
}

// TestGroupedClaimsAndSaves: claims and saves committed as one group (one
// read of every row, one UPDATE per form, one INSERT of every event) keep
// every rule a write alone keeps. A claim of a leased operation is
// refused (R22) and one of a missing operation is not found, without
// failing the others; each granted claim holds the next epoch and its
// reservation event; saves of the group that set different indexed
// columns (a phase, a due time, neither) and free the lease store exactly
// their records; a save under a lease it does not hold is fenced out; and
// the one audit chain over the groups is whole (R25).
func TestGroupedClaimsAndSaves(t *testing.T) {
	s := openTemp(t, sqlite.NoLinger(sqlite.Options{}))
	defer s.Close()
	ctx := t.Context()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	const n = 6
	for i := range n {
		op := &pollwarden.Operation{ID: fmt.Sprintf("op-%d", i), Contract: "c", Phase: pollwarden.PhaseWaiting,
			StartedAt: now, DeadlineAt: now.Add(time.Hour), NextPollAt: now, MaxStatusRequests: 10}
		if err := s.OperationCreate(ctx, op, []pollwarden.Event{{At: now, Kind: pollwarden.EventSubmitted}}); err != nil {
			t.Fatal(err)
		}
	}
	other, err := s.LeaseAcquire(ctx, pollwarden.LeaseParams{OperationID: "op-5", Owner: "other", Now: now, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	groups0, _ := s.WriteGroups()

	type claimed struct {
		op    *pollwarden.Operation
		lease *pollwarden.Lease
	}
	got := make([]claimed, n+1)
	var claims []func() error
	for i := range n + 1 {
		id := fmt.Sprintf("op-%d", i)
		if i == n {
			id = "op-missing"
		}
		claims = append(claims, func() error {
			op, l, err := s.OperationClaim(ctx, pollwarden.ClaimParams{OperationID: id, Owner: "me", Now: now, TTL: time.Minute,
				Change: func(op *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
					op.StatusRequestsUsed++
					return op, []pollwarden.Event{{At: now, Kind: pollwarden.EventRequestSent}}
				}})
			got[i] = claimed{op, l}
			return err
		})
	}
	errs := queueBehind(t, s, claims...)
	for i := range n - 1 {
		c := got[i]
		if errs[i] != nil || c.lease == nil || c.lease.Epoch != 1 || c.lease.Owner != "me" || c.op.Version != 2 || c.op.StatusRequestsUsed != 1 {
			t.Fatalf("claim of op-%d: %+v, %+v, %v; want epoch 1, version 2, one request reserved", i, c.op, c.lease, errs[i])
		}
	}
	if !errors.Is(errs[n-1], pollwarden.ErrLeaseHeld) {
		t.Fatalf("claim of the leased op-5: %v, want ErrLeaseHeld", errs[n-1])
	}
	if !errors.Is(errs[n], pollwarden.ErrNotFound) {
		t.Fatalf("claim of a missing operation: %v, want ErrNotFound", errs[n])
	}
	if op, err := s.OperationGet(ctx, "op-5"); err != nil || op.Version != 1 || op.StatusRequestsUsed != 0 {
		t.Fatalf("op-5 after its refused claim: %+v, %v; want it untouched", op, err)
	}

	later := now.Add(30 * time.Second)
	var saves []func() error
	for i := range n - 1 {
		saves = append(saves, func() error {
			op := got[i].op.Clone()
			switch i % 3 {
			case 1:
				op.Phase = pollwarden.PhaseSucceeded
				op.FinishedAt = &later
			case 2:
				op.NextPollAt = later
			}
			op.LastState = "running"
			return s.OperationSave(ctx, pollwarden.SaveParams{Op: op, Lease: got[i].lease, Now: now, Release: true,
				Events: []pollwarden.Event{{At: now, Kind: pollwarden.EventResponseReceived}}})
		})
	}
	// A save under a lease that is not the current one: fenced out.
	saves = append(saves, func() error {
		op, err := s.OperationGet(ctx, "op-5")
		if err != nil {
			return err
		}
		stale := *other
		stale.Epoch--
		return s.OperationSave(ctx, pollwarden.SaveParams{Op: op, Lease: &stale, Now: now})
	})
	errs = queueBehind(t, s, saves...)
	for i := range n - 1 {
		if errs[i] != nil {
			t.Fatalf("save of op-%d in the group: %v", i, errs[i])
		}
	}
	if !errors.Is(errs[n-1], pollwarden.ErrLeaseLost) {
		t.Fatalf("save under a stale lease: %v, want ErrLeaseLost", errs[n-1])
	}
	for i := range n - 1 {
		id := fmt.Sprintf("op-%d", i)
		op, err := s.OperationGet(ctx, id)
		if err != nil || op.Version != 3 || op.LastState != "running" || op.StatusRequestsUsed != 1 {
			t.Fatalf("%s after the grouped save: %+v, %v", id, op, err)
		}
		wantPhase, wantNext := pollwarden.PhaseWaiting, now
		switch i % 3 {
		case 1:
			wantPhase = pollwarden.PhaseSucceeded
		case 2:
			wantNext = later
		}
		if op.Phase != wantPhase || !op.NextPollAt.Equal(wantNext) {
			t.Fatalf("%s: phase %s, next poll %v; want %s, %v", id, op.Phase, op.NextPollAt, wantPhase, wantNext)
		}
		// The lease was freed by the save: another owner takes the next epoch.
		if l, err := s.LeaseAcquire(ctx, pollwarden.LeaseParams{OperationID: id, Owner: "third", Now: now, TTL: time.Minute}); err != nil || l.Epoch != 2 {
			t.Fatalf("%s after its release: lease %+v, %v; want epoch 2 free to take", id, l, err)
		}
		if evs, err := s.EventList(ctx, id); err != nil || len(evs) != 3 {
			t.Fatalf("%s has %d events (%v), want 3", id, len(evs), err)
		}
	}
	// The columns the due listing reads were written with the records.
	due, err := s.OperationList(ctx, pollwarden.ListParams{DueBefore: later.Add(time.Hour), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, op := range due {
		ids = append(ids, op.ID)
	}
	// Oldest due first; op-1 and op-4 succeeded, op-2 is due later.
	if fmt.Sprint(ids) != "[op-0 op-3 op-5 op-2]" {
		t.Fatalf("due after the grouped saves: %v, want [op-0 op-3 op-5 op-2]", ids)
	}
	all, err := s.EventScan(ctx, pollwarden.EventScanParams{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n+2*(n-1) {
		t.Fatalf("%d events in the store, want %d", len(all), n+2*(n-1))
	}
	if err := audit.VerifyChain(all); err != nil {
		t.Fatalf("chain after grouped claims and saves: %v", err)
	}
	if groups, _ := s.WriteGroups(); groups < groups0+2 {
		t.Fatalf("%d groups of more than one write committed, want the claims' and the saves'", groups-groups0)
	}
}
