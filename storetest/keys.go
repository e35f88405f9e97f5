package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// A key nothing took from has no row: KeyGet says ErrNotFound and
// KeyList is empty.
func testKeyNone(t *testing.T, s pollwarden.Store) {
	ctx := context.Background()
	if _, err := s.KeyGet(ctx, "env:NONE"); !errors.Is(err, pollwarden.ErrNotFound) {
		t.Fatalf("KeyGet of an unwritten key: %v, want ErrNotFound", err)
	}
	keys, err := s.KeyList(ctx)
	if err != nil || len(keys) != 0 {
		t.Fatalf("KeyList of a new store: %v, %v; want none", keys, err)
	}
}

// RunKeys runs the cases of the quota keys shared through the store.
// open returns a new, empty store and a function that opens another
// handle on the same database (another process or replica); the suite
// closes every store it opens.
func RunKeys(t *testing.T, open func(t *testing.T) (pollwarden.Store, func() pollwarden.Store)) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, []pollwarden.Store)
	}{
		{"HeldClaimReservesNothing", testKeyHeldClaim},
		{"CreateClaimTakesFromTheKey", testKeyCreateClaim},
		{"AnswerHoldsTheKey", testKeyNoteInSave},
		{"RefusedSaveTeachesNothing", testKeyNoteRefusedSave},
		{"QuotaSharedAcrossHandles", testKeyShared},
		{"ListAndGet", testKeyListGet},
		{"ClaimManyTakesQuotaInTurn", testKeyClaimMany},
		{"IncidentOpensWithTheSave", testIncidentOpensWithTheSave},
		{"IncidentClosedByTheProbe", testIncidentClosedByTheProbe},
		{"IncidentDecide", testIncidentDecide},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, another := open(t)
			stores := []pollwarden.Store{first, another(), another()}
			t.Cleanup(func() {
				for _, s := range stores {
					if err := s.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				}
			})
			tc.fn(t, stores)
		})
	}
}

// quotaContract allows requests per per under the key env:SHARED.
func quotaContract(requests int, per time.Duration) *pollwarden.ContractSpec {
	return &pollwarden.ContractSpec{Name: "report-export", Backoff: pollwarden.Backoff{Base: time.Second, Max: time.Minute},
		Status: pollwarden.StatusCall{Credential: &pollwarden.Credential{Header: "Authorization", Ref: "env:SHARED"}},
		Quota:  &pollwarden.QuotaSpec{Requests: requests, Per: per, Key: pollwarden.QuotaKeyCredential}}
}

// quotaClaim claims id at now, reserving a request under c's quota as a
// controller does; a held claim records its wait (shared_quota).
func quotaClaim(ctx context.Context, s pollwarden.Store, c *pollwarden.ContractSpec, id, owner string, now time.Time) (*pollwarden.Operation, *pollwarden.Lease, error) {
	return s.OperationClaim(ctx, quotaParams(c, id, owner, now))
}

// quotaParams are quotaClaim's claim.
func quotaParams(c *pollwarden.ContractSpec, id, owner string, now time.Time) pollwarden.ClaimParams {
	return pollwarden.ClaimParams{OperationID: id, Owner: owner, Now: now, TTL: ttl,
		Change: reserve(now, nil),
		Quota: &pollwarden.QuotaTake{Key: pollwarden.QuotaKey(c),
			Grant: func(ks *pollwarden.KeyState, op *pollwarden.Operation, now time.Time) (*pollwarden.KeyState, pollwarden.KeyGrant) {
				return policy.KeyGrant(ks, op, c, now)
			},
			Held: func(op *pollwarden.Operation, g pollwarden.KeyGrant) (*pollwarden.Operation, []pollwarden.Event) {
				op.NextPollAt, op.NextPollSource = g.Until, g.Source
				until := g.Until
				return op, []pollwarden.Event{{At: now, Kind: pollwarden.EventNextCheckScheduled,
					Data: pollwarden.EventData{NextPollAt: &until, DelaySource: g.Source, Detail: g.Detail}}}
			}}}
}

// A claim the quota holds writes no reservation and takes no lease: the
// record keeps its budget and says why it waits, and the key's row keeps
// the grant and the waiter.
func testKeyHeldClaim(t *testing.T, ss []pollwarden.Store) {
	s := ss[0]
	c := quotaContract(2, time.Hour) // one each 30 minutes
	create(t, s, newOp("op-1"))
	create(t, s, newOp("op-2"))
	if _, l, err := quotaClaim(t.Context(), s, c, "op-1", "a", t0); err != nil || l == nil {
		t.Fatalf("first claim under the quota: %v, %v", l, err)
	}
	held, l, err := quotaClaim(t.Context(), ss[1], c, "op-2", "b", at(time.Minute))
	if err != nil || l != nil {
		t.Fatalf("second claim within the interval: lease %+v, %v; want held, no lease", l, err)
	}
	got := get(t, s, "op-2")
	if got.StatusRequestsUsed != 0 || got.NextPollSource != pollwarden.DelaySharedQuota || !got.NextPollAt.Equal(at(30*time.Minute)) {
		t.Fatalf("held record: used %d, next %s from %s; want 0 used, next at +30m from shared_quota",
			got.StatusRequestsUsed, got.NextPollAt.Sub(t0), got.NextPollSource)
	}
	if held.Version != got.Version {
		t.Errorf("claim returned version %d, stored %d", held.Version, got.Version)
	}
	evs := verify(t, s, "op-2", 2)
	if e := evs[1]; e.Kind != pollwarden.EventNextCheckScheduled || e.Data.DelaySource != pollwarden.DelaySharedQuota {
		t.Errorf("held claim's event: %+v", e)
	}
	if l, err := claimLease(t.Context(), s, "op-2", "c", at(time.Minute), ttl); err != nil || l == nil {
		t.Errorf("a held claim left a lease: %v", err)
	}
	ks, err := s.KeyGet(t.Context(), "env:SHARED")
	if err != nil || ks.WindowUsed != 1 || len(ks.Waiting) != 1 || ks.Waiting[0].Count != 1 {
		t.Fatalf("key row after a grant and a hold: %+v, %v", ks, err)
	}
}

// A save with SaveParams.Quota writes the answer's lesson to the key's
// row with the record: a 429 holds the other operations under the key.
func testKeyNoteInSave(t *testing.T, ss []pollwarden.Store) {
	s := ss[0]
	c := quotaContract(3600, time.Hour)
	create(t, s, newOp("op-1"))
	create(t, s, newOp("op-2"))
	_, l, err := quotaClaim(t.Context(), s, c, "op-1", "a", t0)
	if err != nil || l == nil {
		t.Fatalf("claim: %v, %v", l, err)
	}
	op := get(t, s, "op-1")
	obs := pollwarden.Observation{Status: 429, RetryAfter: "600", ReceivedAt: t0}
	err = s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Lease: l, Now: t0, Release: true,
		Quota: &pollwarden.QuotaNote{Key: "env:SHARED", Note: func(ks *pollwarden.KeyState, now time.Time) *pollwarden.KeyState {
			next, _ := policy.KeyNote(ks, op, c, obs, now)
			return next
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if ks, err := s.KeyGet(t.Context(), "env:SHARED"); err != nil || !ks.HoldUntil.Equal(at(10*time.Minute)) {
		t.Fatalf("key after a 429 with Retry-After 600: %+v, %v", ks, err)
	}
	if _, l, err := quotaClaim(t.Context(), ss[2], c, "op-2", "b", at(time.Minute)); err != nil || l != nil {
		t.Fatalf("another operation under the key: lease %v, %v; want held", l, err)
	}
	if got := get(t, s, "op-2"); !got.NextPollAt.Equal(at(10 * time.Minute)) {
		t.Fatalf("held until %s, want the reset at +10m", got.NextPollAt.Sub(t0))
	}
}

// A save refused by its checks teaches its key nothing.
func testKeyNoteRefusedSave(t *testing.T, ss []pollwarden.Store) {
	s := ss[0]
	create(t, s, newOp("op-1"))
	op := get(t, s, "op-1")
	op.Version = 7
	err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: t0,
		Quota: &pollwarden.QuotaNote{Key: "env:SHARED", Note: func(ks *pollwarden.KeyState, now time.Time) *pollwarden.KeyState {
			ks.HoldUntil, ks.UpdatedAt = at(time.Hour), now
			return ks
		}}})
	if !errors.Is(err, pollwarden.ErrConflict) {
		t.Fatalf("stale save: %v, want ErrConflict", err)
	}
	if ks, err := s.KeyGet(t.Context(), "env:SHARED"); !errors.Is(err, pollwarden.ErrNotFound) {
		t.Fatalf("a refused save wrote the key: %+v, %v", ks, err)
	}
}

// Claims from many goroutines over several handles on one database (as
// processes and replicas) never grant more than the quota: at most
// Requests in the window, and the key's count says how many.
func testKeyShared(t *testing.T, ss []pollwarden.Store) {
	const requests, ops, workers = 5, 40, 8
	c := quotaContract(requests, time.Hour)
	for i := range ops {
		create(t, ss[0], newOp(fmt.Sprintf("op-%02d", i)))
	}
	var mu sync.Mutex
	granted := 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			s := ss[w%len(ss)]
			for i := w; i < ops; i += workers {
				// Spread over the window, so several slots free up.
				now := at(time.Duration(i) * time.Hour / ops)
				_, l, err := quotaClaim(t.Context(), s, c, fmt.Sprintf("op-%02d", i), fmt.Sprint("w", w), now)
				if err != nil {
					t.Errorf("claim op-%02d: %v", i, err)
					return
				}
				if l != nil {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if granted == 0 || granted > requests {
		t.Fatalf("%d claims granted in one window, quota %d", granted, requests)
	}
	ks, err := ss[1].KeyGet(t.Context(), "env:SHARED")
	if err != nil || ks.WindowUsed != granted {
		t.Fatalf("key row: %+v, %v; want %d used", ks, err, granted)
	}
	used := 0
	for i := range ops {
		op := get(t, ss[0], fmt.Sprintf("op-%02d", i))
		used += op.StatusRequestsUsed
		if op.StatusRequestsUsed == 0 && op.NextPollSource != pollwarden.DelaySharedQuota {
			t.Errorf("op-%02d neither reserved nor held: %+v", i, op)
		}
	}
	if used != granted {
		t.Fatalf("%d reservations written, %d claims granted", used, granted)
	}
}

// KeyList returns the written keys in order; KeyGet each one.
func testKeyListGet(t *testing.T, ss []pollwarden.Store) {
	s := ss[0]
	a, b := quotaContract(10, time.Hour), quotaContract(10, time.Hour)
	b.Status.Credential = &pollwarden.Credential{Header: "Authorization", Ref: "env:ANOTHER"}
	create(t, s, newOp("op-1"))
	create(t, s, newOp("op-2"))
	if _, l, err := quotaClaim(t.Context(), s, a, "op-1", "a", t0); err != nil || l == nil {
		t.Fatal(l, err)
	}
	if _, l, err := quotaClaim(t.Context(), ss[1], b, "op-2", "a", t0); err != nil || l == nil {
		t.Fatal(l, err)
	}
	keys, err := ss[2].KeyList(t.Context())
	if err != nil || len(keys) != 2 || keys[0].Key != "env:ANOTHER" || keys[1].Key != "env:SHARED" {
		t.Fatalf("KeyList: %+v, %v", keys, err)
	}
	for _, k := range keys {
		got, err := s.KeyGet(t.Context(), k.Key)
		if err != nil || got.Version != k.Version || got.Requests != 10 || got.Per != time.Hour || got.WindowUsed != 1 {
			t.Errorf("KeyGet(%s): %+v, %v", k.Key, got, err)
		}
	}
}
