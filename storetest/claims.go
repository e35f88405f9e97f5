package storetest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// reserve is a Change function like a controller's: one more status
// request and its event. calls counts its runs.
func reserve(now time.Time, calls *atomic.Int32) func(op *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
	return func(op *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
		if calls != nil {
			calls.Add(1)
		}
		op.StatusRequestsUsed++
		return op, []pollwarden.Event{{At: now, Kind: pollwarden.EventRequestSent,
			Data: pollwarden.EventData{RequestsUsed: op.StatusRequestsUsed, MaxRequests: op.MaxStatusRequests}}}
	}
}

func claim(t *testing.T, s pollwarden.Store, id, owner string, now time.Time, calls *atomic.Int32) (*pollwarden.Operation, *pollwarden.Lease, error) {
	t.Helper()
	return s.OperationClaim(t.Context(), pollwarden.ClaimParams{OperationID: id, Owner: owner, Now: now, TTL: ttl,
		Change: reserve(now, calls)})
}

// saveRelease is save with SaveParams.Release.
func saveRelease(t *testing.T, s pollwarden.Store, id string, l *pollwarden.Lease, now time.Time) error {
	t.Helper()
	op := get(t, s, id)
	op.CompletedPolls++
	return s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Lease: l, Now: now, Release: true,
		Events: []pollwarden.Event{{At: now, Kind: pollwarden.EventResponseReceived}}})
}

func testClaimTakesLeaseAndReserves(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	var calls atomic.Int32
	op, l, err := claim(t, s, "op-1", "a", t0, &calls)
	if err != nil {
		t.Fatalf("claim of a free operation: %v", err)
	}
	same(t, "claimed lease", l, &pollwarden.Lease{OperationID: "op-1", Owner: "a", Epoch: 1, ExpiresAt: t0.Add(ttl)})
	if op.Version != 2 || op.StatusRequestsUsed != 1 {
		t.Fatalf("claimed record: version %d used %d, want 2 and 1", op.Version, op.StatusRequestsUsed)
	}
	same(t, "stored record after the claim", get(t, s, "op-1"), op)
	evs := verify(t, s, "op-1", 2)
	if evs[1].Kind != pollwarden.EventRequestSent || evs[1].Data.RequestsUsed != 1 {
		t.Fatalf("the reservation's event: %+v", evs[1])
	}
	// The claim holds the lease against every other claim.
	wantErr(t, "a lease-only claim after a claim", tryAcquire(t, s, "op-1", "b", t0), pollwarden.ErrLeaseHeld)
	before := calls.Load()
	_, _, err = claim(t, s, "op-1", "b", t0.Add(ttl-1), &calls)
	wantErr(t, "claim of a held lease", err, pollwarden.ErrLeaseHeld)
	if calls.Load() != before {
		t.Fatalf("Change was called although the lease was held")
	}
	if err := save(t, s, "op-1", l, t0.Add(time.Second)); err != nil {
		t.Fatalf("save with the claimed lease: %v", err)
	}
	// At the expiry instant the lease is free: the next claim takes it
	// over with the next epoch, and the first owner is fenced out.
	op2, l2, err := claim(t, s, "op-1", "b", t0.Add(ttl), nil)
	if err != nil || l2.Epoch != 2 || op2.StatusRequestsUsed != 3 {
		t.Fatalf("claim of an expired lease: %+v used %v, %v; want epoch 2, used 3", l2, op2, err)
	}
	wantErr(t, "save with the expired claim", save(t, s, "op-1", l, t0.Add(ttl)), pollwarden.ErrLeaseLost)
	wantErr(t, "release-save with the expired claim", saveRelease(t, s, "op-1", l, t0.Add(ttl)), pollwarden.ErrLeaseLost)
	verify(t, s, "op-1", 4)
}

func testClaimRefused(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	want := get(t, s, "op-1")
	var seen *pollwarden.Operation
	op, l, err := s.OperationClaim(t.Context(), pollwarden.ClaimParams{OperationID: "op-1", Owner: "a", Now: t0, TTL: ttl,
		Change: func(op *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
			seen = op
			op.StatusRequestsUsed = 99 // a copy: changing it must not reach the store
			return nil, nil
		}})
	if err != nil || l != nil {
		t.Fatalf("refused claim: lease %+v, %v; want none and no error", l, err)
	}
	if seen == nil {
		t.Fatal("Change was not called")
	}
	if op.Version != want.Version {
		t.Fatalf("refused claim returned version %d, want %d", op.Version, want.Version)
	}
	same(t, "stored record after a refused claim", get(t, s, "op-1"), want)
	verify(t, s, "op-1", 1)
	// No lease was taken, and none was counted.
	if l := acquire(t, s, "op-1", "b", t0); l.Epoch != 1 {
		t.Fatalf("acquire after a refused claim: epoch %d, want 1", l.Epoch)
	}
}

func testClaimSeesLatestRecord(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	op := get(t, s, "op-1")
	op.LastState = "running"
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: t0}); err != nil {
		t.Fatal(err)
	}
	var seen *pollwarden.Operation
	_, _, err := s.OperationClaim(t.Context(), pollwarden.ClaimParams{OperationID: "op-1", Owner: "a", Now: t0, TTL: ttl,
		Change: func(op *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
			seen = op.Clone()
			return nil, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	same(t, "record given to Change", seen, get(t, s, "op-1"))
}

func testClaimBadReservation(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	create(t, s, newOp("op-2"))
	other := get(t, s, "op-2")
	for _, tc := range []struct {
		what   string
		change func(op *pollwarden.Operation) *pollwarden.Operation
	}{
		{"another version", func(op *pollwarden.Operation) *pollwarden.Operation { op.Version++; return op }},
		{"another operation", func(*pollwarden.Operation) *pollwarden.Operation { return other.Clone() }},
	} {
		_, _, err := s.OperationClaim(t.Context(), pollwarden.ClaimParams{OperationID: "op-1", Owner: "a", Now: t0, TTL: ttl,
			Change: func(op *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
				op.StatusRequestsUsed++
				return tc.change(op), nil
			}})
		wantErr(t, "a change for "+tc.what, err, pollwarden.ErrInvalid)
	}
	_, _, err := s.OperationClaim(t.Context(), pollwarden.ClaimParams{OperationID: "op-1", Owner: "a", Now: t0, TTL: ttl})
	wantErr(t, "a claim without Change", err, pollwarden.ErrInvalid)
	_, _, err = claim(t, s, "missing", "a", t0, nil)
	wantErr(t, "a claim of an unknown operation", err, pollwarden.ErrNotFound)
	if op := get(t, s, "op-1"); op.Version != 1 || op.StatusRequestsUsed != 0 {
		t.Fatalf("a refused reservation was stored: %+v", op)
	}
	verify(t, s, "op-1", 1)
	if l := acquire(t, s, "op-1", "b", t0); l.Epoch != 1 {
		t.Fatalf("a failed claim took the lease: next epoch %d, want 1", l.Epoch)
	}
}

func testSaveRelease(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	_, l, err := claim(t, s, "op-1", "a", t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := saveRelease(t, s, "op-1", l, t0.Add(time.Second)); err != nil {
		t.Fatalf("save with release by the holder: %v", err)
	}
	if op := get(t, s, "op-1"); op.Version != 3 || op.CompletedPolls != 1 {
		t.Fatalf("after the release-save: version %d polls %d, want 3 and 1", op.Version, op.CompletedPolls)
	}
	verify(t, s, "op-1", 3)
	// The lease is free at once, the epoch kept, and the released lease
	// no longer writes.
	wantErr(t, "release-save again with the released lease", saveRelease(t, s, "op-1", l, t0.Add(time.Second)), pollwarden.ErrLeaseLost)
	if err := save(t, s, "op-1", nil, t0.Add(time.Second)); err != nil {
		t.Fatalf("save without a lease after the release: %v", err)
	}
	b := acquire(t, s, "op-1", "b", t0.Add(time.Second))
	if b.Epoch != 2 {
		t.Fatalf("epoch after a release-save and an acquire: %d, want 2", b.Epoch)
	}
	// A lost lease releases nothing: the current holder keeps it.
	wantErr(t, "release-save with a taken-over lease", saveRelease(t, s, "op-1", l, t0.Add(time.Second)), pollwarden.ErrLeaseLost)
	wantErr(t, "acquire after a fenced release-save", tryAcquire(t, s, "op-1", "c", t0.Add(time.Second)), pollwarden.ErrLeaseHeld)
	// Release without a lease is ignored: a plain save, fenced as usual.
	op := get(t, s, "op-1")
	err = s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: t0.Add(time.Second), Release: true})
	wantErr(t, "release-save without a lease while leased", err, pollwarden.ErrLeaseHeld)
	if err := save(t, s, "op-1", b, t0.Add(2*time.Second)); err != nil {
		t.Fatalf("the holder's save: %v", err)
	}
}

func testConcurrentClaims(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	const n = 16
	var wg sync.WaitGroup
	leases := make(chan *pollwarden.Lease, n)
	for i := range n {
		wg.Go(func() {
			_, l, err := s.OperationClaim(t.Context(), pollwarden.ClaimParams{OperationID: "op-1",
				Owner: string(rune('a' + i)), Now: t0, TTL: ttl, Change: reserve(t0, nil)})
			switch {
			case err == nil:
				leases <- l
			case !isErr(err, pollwarden.ErrLeaseHeld):
				t.Errorf("OperationClaim: %v", err)
			}
		})
	}
	wg.Wait()
	close(leases)
	var won []*pollwarden.Lease
	for l := range leases {
		won = append(won, l)
	}
	if len(won) != 1 || won[0].Epoch != 1 {
		t.Fatalf("%d concurrent claims won (%+v), want exactly one with epoch 1", len(won), won)
	}
	if op := get(t, s, "op-1"); op.StatusRequestsUsed != 1 || op.Version != 2 {
		t.Fatalf("after concurrent claims: used %d version %d, want 1 and 2", op.StatusRequestsUsed, op.Version)
	}
	verify(t, s, "op-1", 2)
}

// testClaimWithHave: a caller's copy that is still current is reserved
// as if read under the lease; a stale one never is — the change
// written is Change's answer for the stored record.
func testClaimWithHave(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	stale := get(t, s, "op-1")
	cur := stale.Clone()
	cur.LastState = "running"
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: cur, Now: t0}); err != nil {
		t.Fatal(err)
	}
	claimWith := func(have *pollwarden.Operation, owner string, now time.Time) (*pollwarden.Operation, *pollwarden.Lease, error) {
		return s.OperationClaim(t.Context(), pollwarden.ClaimParams{OperationID: "op-1", Owner: owner, Now: now, TTL: ttl,
			Have: have, Change: reserve(now, nil)})
	}
	op, l, err := claimWith(stale, "a", t0)
	if err != nil || l == nil {
		t.Fatalf("claim with a stale copy: %+v, %v", l, err)
	}
	if op.Version != cur.Version+1 || op.LastState != "running" || op.StatusRequestsUsed != 1 {
		t.Fatalf("claim with a stale copy saved %+v; want the stored record (version %d, state running) reserved", op, cur.Version)
	}
	same(t, "stored after a claim with a stale copy", get(t, s, "op-1"), op)
	_, _, err = claimWith(op, "b", t0)
	wantErr(t, "claim with a current copy of a held lease", err, pollwarden.ErrLeaseHeld)
	if err := saveRelease(t, s, "op-1", l, t0); err != nil {
		t.Fatal(err)
	}
	have := get(t, s, "op-1")
	op2, l2, err := claimWith(have, "b", t0)
	if err != nil || l2 == nil || l2.Epoch != 2 || op2.Version != have.Version+1 || op2.StatusRequestsUsed != 2 {
		t.Fatalf("claim with a current copy: %+v %+v, %v", op2, l2, err)
	}
	same(t, "stored after a claim with a current copy", get(t, s, "op-1"), op2)
	verify(t, s, "op-1", 4)
	_, _, err = s.OperationClaim(t.Context(), pollwarden.ClaimParams{OperationID: "op-1", Owner: "c", Now: t0.Add(ttl), TTL: ttl,
		Have: newOp("op-2"), Change: reserve(t0, nil)})
	wantErr(t, "a claim with a copy of another operation", err, pollwarden.ErrInvalid)
}
