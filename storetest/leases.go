package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

const ttl = 30 * time.Second

// claimLease is a claim whose change hands the record back as read:
// it only takes the lease (and, as every write of a record does,
// increments the version). It is how a scheduler's OperationClaim looks
// to the lease rules, without a policy.
func claimLease(ctx context.Context, s pollwarden.Store, id, owner string, now time.Time, ttl time.Duration) (*pollwarden.Lease, error) {
	_, l, err := s.OperationClaim(ctx, pollwarden.ClaimParams{OperationID: id, Owner: owner, Now: now, TTL: ttl,
		Change: func(op *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) { return op, nil }})
	if err == nil && l == nil {
		err = errors.New("the claim took no lease")
	}
	return l, err
}

func acquire(t *testing.T, s pollwarden.Store, id, owner string, now time.Time) *pollwarden.Lease {
	t.Helper()
	l, err := claimLease(t.Context(), s, id, owner, now, ttl)
	if err != nil {
		t.Fatalf("claim of %q by %q at %v: %v", id, owner, now, err)
	}
	return l
}

func tryAcquire(t *testing.T, s pollwarden.Store, id, owner string, now time.Time) error {
	t.Helper()
	_, err := claimLease(t.Context(), s, id, owner, now, ttl)
	return err
}

func release(t *testing.T, s pollwarden.Store, l *pollwarden.Lease) {
	t.Helper()
	if err := s.LeaseRelease(t.Context(), l); err != nil {
		t.Fatalf("LeaseRelease(%+v): %v", l, err)
	}
}

// save reloads the operation, bumps a counter and saves it with lease l.
func save(t *testing.T, s pollwarden.Store, id string, l *pollwarden.Lease, now time.Time) error {
	t.Helper()
	op := get(t, s, id)
	op.StatusRequestsUsed++
	return s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Lease: l, Now: now,
		Events: []pollwarden.Event{{At: now, Kind: pollwarden.EventRequestSent}}})
}

func testLeaseHeldExpired(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	l := acquire(t, s, "op-1", "a", t0)
	want := &pollwarden.Lease{OperationID: "op-1", Owner: "a", Epoch: 1, ExpiresAt: t0.Add(ttl)}
	same(t, "lease", l, want)
	wantErr(t, "acquire by another owner", tryAcquire(t, s, "op-1", "b", t0), pollwarden.ErrLeaseHeld)
	wantErr(t, "acquire again by the holder", tryAcquire(t, s, "op-1", "a", t0), pollwarden.ErrLeaseHeld)
	wantErr(t, "acquire 1ns before expiry", tryAcquire(t, s, "op-1", "b", t0.Add(ttl-1)), pollwarden.ErrLeaseHeld)
	// At the expiry instant the lease is free.
	l2 := acquire(t, s, "op-1", "b", t0.Add(ttl))
	if l2.Epoch != 2 || l2.Owner != "b" || !l2.ExpiresAt.Equal(t0.Add(2*ttl)) {
		t.Fatalf("takeover lease %+v, want epoch 2 owner b expiring %v", l2, t0.Add(2*ttl))
	}
	l3 := acquire(t, s, "op-1", "b", t0.Add(10*ttl))
	if l3.Epoch != 3 {
		t.Fatalf("re-acquire of an expired lease: epoch %d, want 3", l3.Epoch)
	}
}

func testLeaseUnknown(t *testing.T, s pollwarden.Store) {
	wantErr(t, "claim of an unknown id", tryAcquire(t, s, "missing", "a", t0), pollwarden.ErrNotFound)
}

func testReleaseKeepsVersion(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	l := acquire(t, s, "op-1", "a", t0)
	if v := get(t, s, "op-1").Version; v != 2 {
		t.Fatalf("after a claim the record version is %d, want 2", v)
	}
	release(t, s, l)
	if v := get(t, s, "op-1").Version; v != 2 {
		t.Fatalf("a release changed the record version to %d", v)
	}
}

func testSaveWithLease(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	l := acquire(t, s, "op-1", "a", t0)
	for i := range 3 {
		if err := save(t, s, "op-1", l, at(time.Duration(i)*time.Second)); err != nil {
			t.Fatalf("save %d with the current lease: %v", i, err)
		}
	}
	if op := get(t, s, "op-1"); op.Version != 5 || op.StatusRequestsUsed != 3 {
		t.Fatalf("version %d used %d, want 5 (create, claim, three saves) and 3", op.Version, op.StatusRequestsUsed)
	}
}

func testSaveStaleEpoch(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	old := acquire(t, s, "op-1", "a", t0)
	cur := acquire(t, s, "op-1", "b", t0.Add(ttl)) // a's lease expired, b took over
	wantErr(t, "save with the taken-over lease", save(t, s, "op-1", old, t0.Add(ttl)), pollwarden.ErrLeaseLost)
	// A stale epoch stays fenced out even when it names the new owner.
	forged := *cur
	forged.Epoch = old.Epoch
	wantErr(t, "save with an old epoch", save(t, s, "op-1", &forged, t0.Add(ttl)), pollwarden.ErrLeaseLost)
	if err := save(t, s, "op-1", cur, t0.Add(ttl)); err != nil {
		t.Fatalf("save with the current lease: %v", err)
	}
	if n := len(events(t, s, "op-1")); n != 2 {
		t.Fatalf("fenced saves appended events: %d events, want 2", n)
	}
}

func testSaveExpiredLease(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	l := acquire(t, s, "op-1", "a", t0)
	wantErr(t, "save at the expiry instant", save(t, s, "op-1", l, l.ExpiresAt), pollwarden.ErrLeaseLost)
	wantErr(t, "save after expiry", save(t, s, "op-1", l, l.ExpiresAt.Add(time.Hour)), pollwarden.ErrLeaseLost)
	if v := get(t, s, "op-1").Version; v != 2 {
		t.Fatalf("a save with an expired lease was stored: version %d, want 2 (create, claim)", v)
	}
}

func testSaveReleasedLease(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	l := acquire(t, s, "op-1", "a", t0)
	release(t, s, l)
	wantErr(t, "save with a released lease", save(t, s, "op-1", l, t0), pollwarden.ErrLeaseLost)
}

func testSaveWithoutLease(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	l := acquire(t, s, "op-1", "a", t0)
	wantErr(t, "save without a lease while leased", save(t, s, "op-1", nil, t0), pollwarden.ErrLeaseHeld)
	if err := save(t, s, "op-1", nil, l.ExpiresAt); err != nil {
		t.Fatalf("save without a lease once it expired: %v", err)
	}
	l = acquire(t, s, "op-1", "a", l.ExpiresAt)
	release(t, s, l)
	if err := save(t, s, "op-1", nil, l.ExpiresAt.Add(-time.Second)); err != nil {
		t.Fatalf("save without a lease once it was released: %v", err)
	}
}

func testReleaseThenAcquire(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	a := acquire(t, s, "op-1", "a", t0)
	release(t, s, a)
	b := acquire(t, s, "op-1", "b", t0)
	if b.Epoch != a.Epoch+1 {
		t.Fatalf("epoch after release and acquire = %d, want %d", b.Epoch, a.Epoch+1)
	}
	// Releasing a lost lease is not an error and leaves the holder alone.
	release(t, s, a)
	wantErr(t, "acquire after a stale release", tryAcquire(t, s, "op-1", "c", t0), pollwarden.ErrLeaseHeld)
	if err := save(t, s, "op-1", b, t0); err != nil {
		t.Fatalf("holder's save after a stale release: %v", err)
	}
	release(t, s, b)
	if c := acquire(t, s, "op-1", "c", t0); c.Epoch != b.Epoch+1 {
		t.Fatalf("epoch = %d, want %d", c.Epoch, b.Epoch+1)
	}
	release(t, s, nil)
}
