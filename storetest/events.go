package storetest

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
)

func isErr(err, target error) bool { return errors.Is(err, target) }

// verify checks that the stored trail chains and has exactly n events.
func verify(t *testing.T, s pollwarden.Store, id string, n int) []pollwarden.Event {
	t.Helper()
	evs := events(t, s, id)
	if len(evs) != n {
		t.Fatalf("%d events for %q, want %d", len(evs), id, n)
	}
	if err := audit.VerifyChain(evs); err != nil {
		t.Fatalf("stored trail of %q: %v", id, err)
	}
	return evs
}

func testEventsInOrder(t *testing.T, s pollwarden.Store) {
	op := newOp("op-1")
	first := []pollwarden.Event{{At: t0, Kind: pollwarden.EventSubmitted,
		Data: pollwarden.EventData{ProviderJobID: "job-op-1", DeadlineAt: &op.DeadlineAt, MaxRequests: 12}}}
	if err := s.OperationCreate(t.Context(), op, first); err != nil {
		t.Fatal(err)
	}
	rich := pollwarden.EventData{State: "running", PrevState: "queued", HTTPStatus: 503, Transport: pollwarden.TransportTimeout,
		RequestID: "req-1", RetryAfter: "120", RequestsUsed: 3, MaxRequests: 12, FailuresUsed: 1, RateLimited: 2,
		DeadlineAt: ptr(at(40 * time.Minute)), NextPollAt: ptr(at(2*time.Minute + 1).In(time.UTC)),
		DelaySource: pollwarden.DelayRetryAfter, Decision: "wait", Reason: pollwarden.ReasonRateLimited,
		Detail: "a <b> & c", Hint: "poll_after_seconds=-1", Actor: &pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover},
		Option: pollwarden.OptionExtend, Elapsed: "2m0s", ProviderJobID: "job-op-1",
		Options:       []pollwarden.Option{{ID: pollwarden.OptionExtend, NewDeadline: ptr(at(time.Hour)), GrantsAuthority: true}},
		ProviderError: json.RawMessage(`{"b": [1, 2.50], "a": null}`)}
	second := []pollwarden.Event{
		{At: at(time.Minute), Kind: pollwarden.EventRequestSent, Data: pollwarden.EventData{RequestsUsed: 1}},
		{At: at(time.Minute + 1), Kind: pollwarden.EventResponseReceived, Data: rich},
	}
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: at(time.Minute), Events: second}); err != nil {
		t.Fatal(err)
	}
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: at(time.Minute)}); err != nil {
		t.Fatalf("save without events: %v", err)
	}
	third := []pollwarden.Event{{At: at(2 * time.Minute), Kind: pollwarden.EventEscalated}}
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: at(2 * time.Minute), Events: third}); err != nil {
		t.Fatal(err)
	}
	given := append(append(append([]pollwarden.Event{}, first...), second...), third...)
	stored := verify(t, s, "op-1", 4)
	for i, e := range given {
		if e.OperationID != "op-1" || e.Seq != int64(i+1) || e.Hash == "" {
			t.Fatalf("caller's event %d not filled in: %+v", i, e)
		}
	}
	if given[0].PrevHash != "" {
		t.Fatalf("first event has prev_hash %q", given[0].PrevHash)
	}
	same(t, "stored events", stored, given)
}

func testEventsPerOperation(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-a"))
	create(t, s, newOp("op-b"))
	for _, id := range []string{"op-a", "op-b", "op-a"} {
		if err := save(t, s, id, nil, t0); err != nil {
			t.Fatal(err)
		}
	}
	verify(t, s, "op-a", 3)
	if b := verify(t, s, "op-b", 2); b[0].Seq != 1 || b[0].PrevHash != "" {
		t.Fatalf("op-b's trail does not start its own chain: %+v", b[0])
	}
}

func testEventListUnknown(t *testing.T, s pollwarden.Store) {
	evs, err := s.EventList(t.Context(), "missing")
	if err != nil || len(evs) != 0 {
		t.Fatalf("EventList of an unknown id = %v, %v; want no events and no error", evs, err)
	}
}

// testConcurrentSavers starts many writers on the same version, round after
// round: exactly one must win each version, the rest get ErrConflict.
func testConcurrentSavers(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	const writers, rounds = 12, 5
	for round := range rounds {
		base := get(t, s, "op-1")
		var wg sync.WaitGroup
		start := make(chan struct{})
		wins := make(chan int, writers)
		for w := range writers {
			op := base.Clone()
			op.StatusRequestsUsed = round*100 + w
			wg.Go(func() {
				<-start
				err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: t0,
					Events: []pollwarden.Event{{At: t0, Kind: pollwarden.EventStateChanged, Data: pollwarden.EventData{RequestsUsed: op.StatusRequestsUsed}}}})
				switch {
				case err == nil:
					wins <- op.StatusRequestsUsed
				case !isErr(err, pollwarden.ErrConflict):
					t.Errorf("save: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		close(wins)
		var won []int
		for v := range wins {
			won = append(won, v)
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d writers won version %d, want exactly one", round, len(won), base.Version)
		}
		if got := get(t, s, "op-1"); got.Version != base.Version+1 || got.StatusRequestsUsed != won[0] {
			t.Fatalf("round %d: stored version %d used %d, want %d and the winner's %d",
				round, got.Version, got.StatusRequestsUsed, base.Version+1, won[0])
		}
	}
	verify(t, s, "op-1", 1+rounds)
}

// testConcurrentIncrements retries on conflict; no increment may be lost.
func testConcurrentIncrements(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	const writers, each = 8, 10
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for done := 0; done < each; {
				op, err := s.OperationGet(t.Context(), "op-1")
				if err != nil {
					t.Errorf("get: %v", err)
					return
				}
				op.StatusRequestsUsed++
				err = s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: t0,
					Events: []pollwarden.Event{{At: t0, Kind: pollwarden.EventRequestSent, Data: pollwarden.EventData{RequestsUsed: op.StatusRequestsUsed}}}})
				switch {
				case err == nil:
					done++
				case !isErr(err, pollwarden.ErrConflict):
					t.Errorf("save: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := get(t, s, "op-1"); got.StatusRequestsUsed != writers*each || got.Version != 1+writers*each {
		t.Fatalf("used %d version %d, want %d and %d", got.StatusRequestsUsed, got.Version, writers*each, 1+writers*each)
	}
	evs := verify(t, s, "op-1", 1+writers*each)
	for i, e := range evs[1:] {
		if e.Data.RequestsUsed != i+1 {
			t.Fatalf("event %d records %d requests used, want %d: events out of commit order", e.Seq, e.Data.RequestsUsed, i+1)
		}
	}
}
