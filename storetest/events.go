package storetest

import (
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
)

func isErr(err, target error) bool { return errors.Is(err, target) }

// verify checks that the operation's stored events are n, chain into the
// store-wide chain (VerifyOperation), and that the whole store verifies.
func verify(t *testing.T, s pollwarden.Store, id string, n int) []pollwarden.Event {
	t.Helper()
	evs := events(t, s, id)
	if len(evs) != n {
		t.Fatalf("%d events for %q, want %d", len(evs), id, n)
	}
	prev := func(pos int64) (string, bool, error) {
		page, err := s.EventScan(t.Context(), pollwarden.EventScanParams{AfterPos: pos - 1, Limit: 1})
		if err != nil || len(page) == 0 || page[0].Pos != pos {
			return "", false, err
		}
		return page[0].Hash, true, nil
	}
	ce, err := audit.VerifyOperation(evs, prev)
	if err != nil || ce != nil {
		t.Fatalf("stored trail of %q: %v %v", id, ce, err)
	}
	verifyStore(t, s)
	return evs
}

// scanAll walks the whole chain with EventScan, a few events per page.
func scanAll(t *testing.T, s pollwarden.Store) []pollwarden.Event {
	t.Helper()
	var all []pollwarden.Event
	var after int64
	for {
		page, err := s.EventScan(t.Context(), pollwarden.EventScanParams{AfterPos: after, Limit: 3})
		if err != nil {
			t.Fatalf("EventScan after %d: %v", after, err)
		}
		if len(page) > 3 {
			t.Fatalf("EventScan returned %d events, limit 3", len(page))
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = page[len(page)-1].Pos
	}
}

// verifyStore checks the store-wide chain and that AuditHead is its end.
func verifyStore(t *testing.T, s pollwarden.Store) []pollwarden.Event {
	t.Helper()
	all := scanAll(t, s)
	if err := audit.VerifyChain(all); err != nil {
		t.Fatalf("store-wide chain: %v", err)
	}
	pos, hash, err := s.AuditHead(t.Context())
	if err != nil {
		t.Fatalf("AuditHead: %v", err)
	}
	var wantPos int64
	var wantHash string
	if n := len(all); n > 0 {
		wantPos, wantHash = all[n-1].Pos, all[n-1].Hash
	}
	if pos != wantPos || hash != wantHash {
		t.Fatalf("AuditHead = %d %q, the chain ends at %d %q", pos, hash, wantPos, wantHash)
	}
	return all
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
		if e.OperationID != "op-1" || e.Seq != int64(i+1) || e.Pos != int64(i+1) || e.Hash == "" || len(e.Payload) == 0 {
			t.Fatalf("caller's event %d not filled in: %+v", i, e)
		}
		if string(stored[i].Payload) != string(e.Payload) {
			t.Fatalf("event %d: stored payload %q, caller was given %q", i, stored[i].Payload, e.Payload)
		}
	}
	if given[0].PrevHash != "" {
		t.Fatalf("first event has prev_hash %q", given[0].PrevHash)
	}
	same(t, "stored events", stored, given)
}

// testEventsStoreWideChain interleaves operations: positions run across
// the whole store, seqs per operation, and every event points at the one
// appended just before it, whatever its operation.
func testEventsStoreWideChain(t *testing.T, s pollwarden.Store) {
	if pos, hash, err := s.AuditHead(t.Context()); err != nil || pos != 0 || hash != "" {
		t.Fatalf("AuditHead of an empty store = %d %q %v", pos, hash, err)
	}
	if page, err := s.EventScan(t.Context(), pollwarden.EventScanParams{}); err != nil || len(page) != 0 {
		t.Fatalf("EventScan of an empty store = %v %v", page, err)
	}
	create(t, s, newOp("op-a"))
	create(t, s, newOp("op-b"))
	for _, id := range []string{"op-a", "op-b", "op-a", "op-a", "op-b"} {
		if err := save(t, s, id, nil, t0); err != nil {
			t.Fatal(err)
		}
	}
	all := verifyStore(t, s)
	if len(all) != 7 {
		t.Fatalf("%d events in the store, want 7", len(all))
	}
	wantOps := []string{"op-a", "op-b", "op-a", "op-b", "op-a", "op-a", "op-b"}
	wantSeq := []int64{1, 1, 2, 2, 3, 4, 3}
	for i, e := range all {
		if e.Pos != int64(i+1) || e.OperationID != wantOps[i] || e.Seq != wantSeq[i] {
			t.Fatalf("event %d: pos %d %s seq %d, want pos %d %s seq %d", i, e.Pos, e.OperationID, e.Seq, i+1, wantOps[i], wantSeq[i])
		}
		if len(e.Payload) == 0 || !reflect.DeepEqual(e.Data, pollwarden.EventData{}) {
			t.Fatalf("EventScan event %d is not raw: payload %q data %+v", i, e.Payload, e.Data)
		}
	}
	b := verify(t, s, "op-b", 3)
	if b[0].Pos != 2 || b[0].PrevHash != all[0].Hash || b[1].PrevHash != all[2].Hash {
		t.Fatalf("op-b's events do not chain to the events before them: %+v", b)
	}
	verify(t, s, "op-a", 4)
	page, err := s.EventScan(t.Context(), pollwarden.EventScanParams{OperationID: "op-a", AfterPos: 3, Limit: 10})
	if err != nil || len(page) != 2 || page[0].Pos != 5 || page[1].Pos != 6 {
		t.Fatalf("EventScan of op-a after pos 3 = %+v, %v; want pos 5 and 6", page, err)
	}
	if page, err := s.EventScan(t.Context(), pollwarden.EventScanParams{OperationID: "missing"}); err != nil || len(page) != 0 {
		t.Fatalf("EventScan of an unknown operation = %v, %v", page, err)
	}
	if page, err := s.EventScan(t.Context(), pollwarden.EventScanParams{AfterPos: 7}); err != nil || len(page) != 0 {
		t.Fatalf("EventScan after the head = %v, %v", page, err)
	}
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
	if b := verify(t, s, "op-b", 2); b[0].Seq != 1 || b[0].Pos != 2 {
		t.Fatalf("op-b's first event is seq %d at pos %d, want seq 1 at pos 2", b[0].Seq, b[0].Pos)
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
