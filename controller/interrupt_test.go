package controller

import (
	"context"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// TestResumedAndInterruptedNotes: each appends one event saying who and
// how many requests were used, changing nothing else; while another owner
// holds the lease, nothing is written and the caller is not held up.
func TestResumedAndInterruptedNotes(t *testing.T) {
	r := newSubmitRig(t, false, "")
	ctx := context.Background()
	op, err := r.ctl.Start(ctx, r.ex, policy.NewParams{ID: "op-n", ProviderJobID: "j1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ctl.Interrupted(ctx, op.ID, "pollwarden wait (cli:alice)"); err != nil {
		t.Fatal(err)
	}
	if err := r.ctl.Resumed(ctx, op.ID, "pollwarden wait (cli:bob)"); err != nil {
		t.Fatal(err)
	}
	evs, err := r.store.EventList(ctx, op.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := len(evs)
	if n < 3 || evs[n-2].Kind != pollwarden.EventInterrupted || evs[n-1].Kind != pollwarden.EventResumed ||
		evs[n-1].Data.Detail != "pollwarden wait (cli:bob)" || evs[n-1].Data.MaxRequests != op.MaxStatusRequests {
		t.Fatalf("events: %+v", evs)
	}
	after, err := r.store.OperationGet(ctx, op.ID)
	if err != nil || after.Phase != op.Phase || after.StatusRequestsUsed != op.StatusRequestsUsed {
		t.Fatalf("the notes changed the record: %+v %v", after, err)
	}
	if _, err := r.store.LeaseAcquire(ctx, pollwarden.LeaseParams{OperationID: op.ID, Owner: "other", Now: r.ctl.clock.Now(), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := r.ctl.Resumed(ctx, op.ID, "pollwarden wait (cli:carol)"); err != nil {
		t.Fatalf("a resume under another owner's lease: %v", err)
	}
	if again, _ := r.store.EventList(ctx, op.ID); len(again) != n {
		t.Fatalf("%d events after a resume under another owner's lease, want %d", len(again), n)
	}
}
