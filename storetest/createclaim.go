package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// createClaim creates op with one submitted event and claims it at now
// in the same write, reserving one request (and, with c, taking it from
// c's quota as quotaClaim does).
func createClaim(t *testing.T, s pollwarden.Store, op *pollwarden.Operation, owner string, now time.Time, c *pollwarden.ContractSpec) (*pollwarden.Operation, *pollwarden.Lease, error) {
	t.Helper()
	ev := []pollwarden.Event{{At: op.StartedAt, Kind: pollwarden.EventSubmitted,
		Data: pollwarden.EventData{ProviderJobID: op.ProviderJobID, DeadlineAt: &op.DeadlineAt}}}
	cp := pollwarden.ClaimParams{OperationID: op.ID, Owner: owner, Now: now, TTL: ttl, Change: reserve(now, nil)}
	if c != nil {
		cp.Quota = &pollwarden.QuotaTake{Key: pollwarden.QuotaKey(c),
			Grant: func(ks *pollwarden.KeyState, op *pollwarden.Operation, now time.Time) (*pollwarden.KeyState, pollwarden.KeyGrant) {
				return policy.KeyGrant(ks, op, c, now)
			},
			Held: func(op *pollwarden.Operation, g pollwarden.KeyGrant) (*pollwarden.Operation, []pollwarden.Event) {
				op.NextPollAt, op.NextPollSource = g.Until, g.Source
				until := g.Until
				return op, []pollwarden.Event{{At: now, Kind: pollwarden.EventNextCheckScheduled,
					Data: pollwarden.EventData{NextPollAt: &until, DelaySource: g.Source, Detail: g.Detail}}}
			}}
	}
	return s.OperationCreateClaim(t.Context(), pollwarden.CreateClaimParams{Op: op, Events: ev, Claim: cp})
}

// A create with its claim stores, in one write, the record as claimed
// (Version 2, one request reserved), its first event then the
// reservation's, chained, and the lease (epoch 1), which holds against
// every other claim and fences saves like any claim's.
func testCreateClaimReserves(t *testing.T, s pollwarden.Store) {
	op := newOp("op-1")
	claimed, l, err := createClaim(t, s, op, "a", t0, nil)
	if err != nil {
		t.Fatalf("create with its claim: %v", err)
	}
	if op.Version != 1 {
		t.Errorf("the created record's Version %d, want 1", op.Version)
	}
	same(t, "lease", l, &pollwarden.Lease{OperationID: "op-1", Owner: "a", Epoch: 1, ExpiresAt: t0.Add(ttl)})
	if claimed.Version != 2 || claimed.StatusRequestsUsed != 1 {
		t.Fatalf("claimed record: version %d used %d, want 2 and 1", claimed.Version, claimed.StatusRequestsUsed)
	}
	same(t, "stored record", get(t, s, "op-1"), claimed)
	evs := verify(t, s, "op-1", 2)
	if evs[0].Kind != pollwarden.EventSubmitted || evs[1].Kind != pollwarden.EventRequestSent || evs[1].Data.RequestsUsed != 1 {
		t.Fatalf("events: %s then %s (%+v), want submitted then the reservation", evs[0].Kind, evs[1].Kind, evs[1].Data)
	}
	verifyStore(t, s)
	wantErr(t, "a claim while the create's lease is held", tryAcquire(t, s, "op-1", "b", at(ttl-1)), pollwarden.ErrLeaseHeld)
	due, err := s.OperationList(t.Context(), pollwarden.ListParams{DueBefore: at(time.Second)})
	if err != nil || len(due) != 0 {
		t.Fatalf("due listing while the create's lease is held: %d, %v; want none", len(due), err)
	}
	if err := saveRelease(t, s, "op-1", l, at(time.Second)); err != nil {
		t.Fatalf("the answer saved with the create's lease: %v", err)
	}
	if err := tryAcquire(t, s, "op-1", "b", at(2*time.Second)); err != nil {
		t.Fatalf("claim after the release: %v", err)
	}
}

// A claim whose change takes nothing leaves the create alone: the record
// as created, its events, no lease.
func testCreateClaimRefused(t *testing.T, s pollwarden.Store) {
	op := newOp("op-1")
	got, l, err := s.OperationCreateClaim(t.Context(), pollwarden.CreateClaimParams{Op: op,
		Claim: pollwarden.ClaimParams{OperationID: "op-1", Owner: "a", Now: t0, TTL: ttl,
			Change: func(*pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) { return nil, nil }}})
	if err != nil || l != nil || got.Version != 1 {
		t.Fatalf("create with a refused claim: %+v, lease %+v, %v; want version 1, no lease", got, l, err)
	}
	same(t, "stored record", get(t, s, "op-1"), got)
	if l, err := claimLease(t.Context(), s, "op-1", "b", t0, ttl); err != nil || l.Epoch != 1 {
		t.Fatalf("the lease after a refused claim: %+v, %v; want free, first epoch 1", l, err)
	}
}

// A taken id, a pruned one, or a claim for another operation writes
// nothing at all: neither the record, nor the reservation, nor the
// lease, nor the key's take (they commit together or not at all).
func testCreateClaimNothingOrAll(t *testing.T, s pollwarden.Store) {
	c := quotaContract(3600, time.Hour)
	create(t, s, newOp("taken"))
	_, _, err := createClaim(t, s, newOp("taken"), "a", t0, c)
	wantErr(t, "create and claim of a taken id", err, pollwarden.ErrExists)
	if got := get(t, s, "taken"); got.Version != 1 || got.StatusRequestsUsed != 0 {
		t.Fatalf("the taken record changed: version %d used %d", got.Version, got.StatusRequestsUsed)
	}
	verify(t, s, "taken", 1)
	other := newOp("op-2")
	_, _, err = s.OperationCreateClaim(t.Context(), pollwarden.CreateClaimParams{Op: other,
		Claim: pollwarden.ClaimParams{OperationID: "op-3", Owner: "a", Now: t0, TTL: ttl, Change: reserve(t0, nil)}})
	wantErr(t, "a claim for another operation", err, pollwarden.ErrInvalid)
	if _, err := s.OperationGet(t.Context(), "op-2"); !errors.Is(err, pollwarden.ErrNotFound) {
		t.Fatalf("refused create and claim stored a record: %v", err)
	}

	// A pruned id fails inside the transaction, after the row's insert.
	p := s.(pollwarden.Pruner)
	gone := newOp("gone")
	create(t, s, gone)
	gone.Phase, gone.FinishedAt = pollwarden.PhaseSucceeded, ptr(t0)
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: gone, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.OperationPrune(t.Context(), pollwarden.PruneParams{FinishedBefore: at(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	pos, hash, _ := s.AuditHead(t.Context())
	_, _, err = createClaim(t, s, newOp("gone"), "a", t0, c)
	wantErr(t, "create and claim of a pruned id", err, pollwarden.ErrPruned)
	if _, err := s.OperationGet(t.Context(), "gone"); !errors.Is(err, pollwarden.ErrNotFound) {
		t.Fatalf("a pruned id's create and claim left a record: %v", err)
	}
	if p2, h2, _ := s.AuditHead(t.Context()); p2 != pos || h2 != hash {
		t.Fatalf("a failed create and claim appended events: head %d→%d", pos, p2)
	}
	if ks, err := s.KeyGet(t.Context(), "env:SHARED"); err == nil && ks.WindowUsed != 0 {
		t.Fatalf("a failed create and claim took from the key: %+v", ks)
	}
}

// The contract given with the create is kept in the same write.
func testCreateClaimKeepsContract(t *testing.T, s pollwarden.Store) {
	sc := &pollwarden.StoredContract{Fingerprint: "fp-cc", Name: "report-export", Canonical: []byte(`{"Name":"report-export"}`)}
	op := newOp("op-1")
	op.ContractFingerprint = sc.Fingerprint
	_, l, err := s.OperationCreateClaim(t.Context(), pollwarden.CreateClaimParams{Op: op, Contract: sc,
		Claim: pollwarden.ClaimParams{OperationID: "op-1", Owner: "a", Now: t0, TTL: ttl, Change: reserve(t0, nil)}})
	if err != nil || l == nil {
		t.Fatalf("create and claim under a contract: %v, %v", l, err)
	}
	if got, err := s.ContractGet(t.Context(), "fp-cc"); err != nil || got.Name != "report-export" {
		t.Fatalf("ContractGet after the create and claim: %+v, %v", got, err)
	}
}

// Under a shared quota the create's claim takes from the key like any
// claim; once the key holds it, the record is created with the wait
// recorded, nothing reserved and no lease.
func testKeyCreateClaim(t *testing.T, ss []pollwarden.Store) {
	s := ss[0]
	c := quotaContract(2, time.Hour) // one each 30 minutes
	if _, l, err := createClaim(t, s, newOp("op-1"), "a", t0, c); err != nil || l == nil {
		t.Fatalf("first create and claim under the quota: %v, %v", l, err)
	}
	held, l, err := createClaim(t, ss[1], newOp("op-2"), "b", at(time.Minute), c)
	if err != nil || l != nil {
		t.Fatalf("second within the interval: lease %+v, %v; want held, no lease", l, err)
	}
	got := get(t, s, "op-2")
	if got.StatusRequestsUsed != 0 || got.NextPollSource != pollwarden.DelaySharedQuota || !got.NextPollAt.Equal(at(30*time.Minute)) {
		t.Fatalf("held record: used %d, next %s from %s; want 0 used, next at +30m from shared_quota",
			got.StatusRequestsUsed, got.NextPollAt.Sub(t0), got.NextPollSource)
	}
	same(t, "returned held record", held, got)
	evs := verify(t, s, "op-2", 2)
	if evs[0].Kind != pollwarden.EventSubmitted || evs[1].Kind != pollwarden.EventNextCheckScheduled {
		t.Fatalf("held create's events: %s, %s", evs[0].Kind, evs[1].Kind)
	}
	if err := tryAcquire(t, s, "op-2", "c", at(time.Minute)); err != nil {
		t.Fatalf("a held create left a lease: %v", err)
	}
	ks, err := s.KeyGet(t.Context(), "env:SHARED")
	if err != nil || ks.WindowUsed != 1 || len(ks.Waiting) != 1 {
		t.Fatalf("key row after a grant and a hold: %+v, %v", ks, err)
	}
}
