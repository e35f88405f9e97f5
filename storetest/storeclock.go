package storetest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// RunStoreClock runs the cases for a driver whose own clock decides every
// lease (PostgreSQL: one database clock for replicas whose clocks
// disagree). Callers here pass times far from the store's clock, ahead and
// behind, as a replica with a wrong clock would; none of them may take a
// live lease, keep a dead one or fence out the holder. open must return a
// new, empty store for each call.
func RunStoreClock(t *testing.T, open func(t *testing.T) pollwarden.Store) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, pollwarden.Store)
	}{
		{"ClaimAheadCannotSteal", testClaimAheadCannotSteal},
		{"LeaseExpiresOnStoreClock", testLeaseExpiresOnStoreClock},
		{"QuotaOnStoreClock", testQuotaOnStoreClock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

// skew is how far the callers' clocks are from the store's: far more than
// any lease.
const skew = time.Hour

// testClaimAheadCannotSteal: a replica whose clock is behind claims; one
// whose clock is ahead by more than the lease tries to claim and save
// without a lease, and is refused each time; the holder's own writes
// still commit.
func testClaimAheadCannotSteal(t *testing.T, s pollwarden.Store) {
	wall := time.Now()
	op := newOp("op-1")
	op.StartedAt, op.NextPollAt, op.DeadlineAt = wall.Add(-2*skew), wall.Add(-2*skew), wall.Add(2*skew)
	create(t, s, op)
	const long = time.Minute // the holder's lease cannot lapse while the test runs
	behind, ahead := wall.Add(-skew), wall.Add(skew)
	_, l, err := s.OperationClaim(t.Context(), pollwarden.ClaimParams{OperationID: "op-1", Owner: "behind",
		Now: behind, TTL: long, Change: reserve(behind, nil)})
	if err != nil || l == nil {
		t.Fatalf("claim of a free operation: %+v %v", l, err)
	}
	var calls atomic.Int32
	_, stolen, err := s.OperationClaim(t.Context(), pollwarden.ClaimParams{OperationID: "op-1", Owner: "ahead",
		Now: ahead, TTL: long, Change: reserve(ahead, &calls)})
	wantErr(t, "claim by a replica whose clock is ahead", err, pollwarden.ErrLeaseHeld)
	if stolen != nil || calls.Load() != 0 {
		t.Fatalf("the claim ahead took %+v and reserved %d times", stolen, calls.Load())
	}
	wantErr(t, "unleased save by a replica whose clock is ahead", save(t, s, "op-1", nil, ahead), pollwarden.ErrLeaseHeld)
	if !l.ExpiresAt.After(behind.Add(long)) || !l.ExpiresAt.Before(ahead) {
		t.Fatalf("lease expires at %v: not on the store's clock (caller said %v, TTL %v)", l.ExpiresAt, behind, long)
	}
	// The holder's clock may say anything: the store says its lease is live.
	if err := save(t, s, "op-1", l, ahead.Add(skew)); err != nil {
		t.Fatalf("holder's save with its clock past the lease: %v", err)
	}
	if err := saveRelease(t, s, "op-1", l, behind); err != nil {
		t.Fatalf("holder's release-save: %v", err)
	}
	_, next, err := s.OperationClaim(t.Context(), pollwarden.ClaimParams{OperationID: "op-1", Owner: "ahead",
		Now: ahead, TTL: long, Change: reserve(ahead, nil)})
	if err != nil || next == nil || next.Epoch != l.Epoch+1 {
		t.Fatalf("claim after the release: %+v %v, want epoch %d", next, err, l.Epoch+1)
	}
	if got := get(t, s, "op-1"); got.StatusRequestsUsed != 3 {
		t.Fatalf("requests used %d, want 3 (two claims and one save)", got.StatusRequestsUsed)
	}
}

// testLeaseExpiresOnStoreClock: a short lease taken by a caller whose clock
// is ahead lapses when the store's clock passes it, for a caller whose
// clock is far behind (who, on its own clock, would wait an hour); the
// first holder is then fenced out although its clock says it still holds.
func testLeaseExpiresOnStoreClock(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	const short = 200 * time.Millisecond
	ahead := time.Now().Add(skew)
	l, err := claimLease(t.Context(), s, "op-1", "ahead", ahead, short)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	giveUp := time.Now().Add(30 * time.Second)
	var taken *pollwarden.Lease
	for taken == nil {
		behind := time.Now().Add(-skew)
		taken, err = claimLease(t.Context(), s, "op-1", "behind", behind, time.Minute)
		if err != nil && !isErr(err, pollwarden.ErrLeaseHeld) {
			t.Fatalf("claim behind: %v", err)
		}
		if taken == nil && time.Now().After(giveUp) {
			t.Fatalf("a %v lease was still held 30 s later for a caller whose clock is behind: expiry follows the caller's clock (%v)", short, err)
		}
		if taken == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if taken.Epoch != l.Epoch+1 {
		t.Fatalf("takeover epoch %d, want %d", taken.Epoch, l.Epoch+1)
	}
	wantErr(t, "save by the first holder, its clock inside its lease", save(t, s, "op-1", l, ahead), pollwarden.ErrLeaseLost)
}

// testQuotaOnStoreClock: replicas whose clocks disagree share one quota
// timeline (the store's), and a held request's wait comes back on the
// caller's own clock: an hour-fast replica is held for what is left of
// the interval, not an hour more or less.
func testQuotaOnStoreClock(t *testing.T, s pollwarden.Store) {
	wall := time.Now()
	c := quotaContract(2, time.Hour) // one each 30 minutes
	for _, id := range []string{"op-1", "op-2"} {
		op := newOp(id)
		op.StartedAt, op.NextPollAt, op.DeadlineAt = wall.Add(-2*skew), wall.Add(-2*skew), wall.Add(2*skew)
		create(t, s, op)
	}
	behind, ahead := wall.Add(-skew), wall.Add(skew)
	if _, l, err := quotaClaim(t.Context(), s, c, "op-1", "behind", behind); err != nil || l == nil {
		t.Fatalf("first claim: %v, %v", l, err)
	}
	if _, l, err := quotaClaim(t.Context(), s, c, "op-2", "ahead", ahead); err != nil || l != nil {
		t.Fatalf("a replica an hour ahead took a slot the store's clock has not reached: %v, %v", l, err)
	}
	wait := get(t, s, "op-2").NextPollAt.Sub(ahead)
	if wait <= 0 || wait > 30*time.Minute {
		t.Fatalf("held for %s on the caller's clock; want what is left of the 30-minute interval", wait)
	}
}
