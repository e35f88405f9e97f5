package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// claimMany calls OperationClaimMany, skipping the test for a store that
// does not claim many at once (pollwarden.ManyClaimer is optional).
func claimMany(t *testing.T, s pollwarden.Store, ps []pollwarden.ClaimParams) []pollwarden.ClaimResult {
	t.Helper()
	mc, ok := s.(pollwarden.ManyClaimer)
	if !ok {
		t.Skip("the store does not implement pollwarden.ManyClaimer")
	}
	res := mc.OperationClaimMany(t.Context(), ps)
	if len(res) != len(ps) {
		t.Fatalf("OperationClaimMany: %d results for %d claims", len(res), len(ps))
	}
	return res
}

// testClaimManyEachAlone: every claim of one call is decided as a single
// claim would be, and refused ones fail alone, writing nothing (no
// record, no lease, no event) while the others commit: a free operation
// is reserved with epoch 1, a held lease is passed over without its
// Change running, a refused gate takes nothing, an invalid change and an
// unknown operation fail, and the second claim of an operation given
// twice finds the first's lease.
func testClaimManyEachAlone(t *testing.T, s pollwarden.Store) {
	for _, id := range []string{"op-1", "op-2", "op-3", "op-4"} {
		create(t, s, newOp(id))
	}
	acquire(t, s, "op-2", "x", t0)
	want3 := get(t, s, "op-3")
	var heldCalls atomic.Int32
	p := func(id string, change func(*pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event)) pollwarden.ClaimParams {
		return pollwarden.ClaimParams{OperationID: id, Owner: "a", Now: t0, TTL: ttl, Change: change}
	}
	res := claimMany(t, s, []pollwarden.ClaimParams{
		p("op-1", reserve(t0, nil)),
		p("op-2", reserve(t0, &heldCalls)),
		p("op-3", func(*pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) { return nil, nil }),
		p("op-4", func(op *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) {
			op.Version++
			return op, nil
		}),
		p("missing", reserve(t0, nil)),
		p("op-1", reserve(t0, nil)),
		{OperationID: "op-1", Owner: "a", TTL: ttl}, // no Change
	})
	if r := res[0]; r.Err != nil || r.Lease == nil || r.Lease.Epoch != 1 || r.Op.Version != 2 || r.Op.StatusRequestsUsed != 1 {
		t.Fatalf("claim of a free operation: %+v", r)
	}
	same(t, "lease of the free operation", res[0].Lease, &pollwarden.Lease{OperationID: "op-1", Owner: "a", Epoch: 1, ExpiresAt: t0.Add(ttl)})
	same(t, "stored after the claim", get(t, s, "op-1"), res[0].Op)
	wantErr(t, "claim of a held lease", res[1].Err, pollwarden.ErrLeaseHeld)
	if heldCalls.Load() != 0 {
		t.Errorf("Change ran for an operation whose lease was held")
	}
	if r := res[2]; r.Err != nil || r.Lease != nil || r.Op == nil || r.Op.Version != want3.Version {
		t.Fatalf("refused gate: %+v; want the record as read, no lease", r)
	}
	same(t, "stored after a refused gate", get(t, s, "op-3"), want3)
	wantErr(t, "an invalid change", res[3].Err, pollwarden.ErrInvalid)
	wantErr(t, "an unknown operation", res[4].Err, pollwarden.ErrNotFound)
	wantErr(t, "a second claim of the same operation", res[5].Err, pollwarden.ErrLeaseHeld)
	wantErr(t, "a claim without Change", res[6].Err, pollwarden.ErrInvalid)
	verify(t, s, "op-1", 2)
	verify(t, s, "op-2", 1)
	verify(t, s, "op-3", 1)
	verify(t, s, "op-4", 1)
	for id, epoch := range map[string]int64{"op-3": 1, "op-4": 1} {
		if l := acquire(t, s, id, "b", t0); l.Epoch != epoch {
			t.Fatalf("%s after a claim that wrote nothing: next epoch %d, want %d", id, l.Epoch, epoch)
		}
	}
}

// testClaimManyFencing: leases taken together are fenced like single
// ones: the holder saves with its own, a later batch takes an expired
// one over with the next epoch, and the first holder is then refused.
func testClaimManyFencing(t *testing.T, s pollwarden.Store) {
	ids := []string{"op-1", "op-2", "op-3"}
	var ps []pollwarden.ClaimParams
	for _, id := range ids {
		create(t, s, newOp(id))
		ps = append(ps, pollwarden.ClaimParams{OperationID: id, Owner: "a", Now: t0, TTL: ttl, Change: reserve(t0, nil)})
	}
	first := claimMany(t, s, ps)
	for i, r := range first {
		if r.Err != nil || r.Lease == nil || r.Lease.Epoch != 1 {
			t.Fatalf("first batch, %s: %+v", ids[i], r)
		}
	}
	if err := saveRelease(t, s, "op-1", first[0].Lease, at(time.Second)); err != nil {
		t.Fatalf("release-save with a lease of the batch: %v", err)
	}
	for i := range ps {
		ps[i].Owner, ps[i].Now, ps[i].Change = "b", t0.Add(ttl), reserve(t0.Add(ttl), nil)
	}
	second := claimMany(t, s, ps)
	for i, r := range second {
		if r.Err != nil || r.Lease == nil || r.Lease.Epoch != 2 || r.Op.StatusRequestsUsed != 2 {
			t.Fatalf("second batch, %s: %+v; want epoch 2, used 2", ids[i], r)
		}
	}
	for i, id := range ids[1:] {
		wantErr(t, "save with the expired lease of "+id, save(t, s, id, first[i+1].Lease, t0.Add(ttl)), pollwarden.ErrLeaseLost)
	}
	for i, id := range ids {
		if err := saveRelease(t, s, id, second[i].Lease, t0.Add(ttl)); err != nil {
			t.Fatalf("release-save of %s with the second lease: %v", id, err)
		}
	}
	verify(t, s, "op-1", 5)
	verify(t, s, "op-2", 4)
}

// testKeyClaimMany: the quota of one key is taken claim after claim
// within a batch (the first granted, the next held with its wait recorded
// and no lease), and batches on one handle race single claims on others
// under the same key without a deadlock (rows, then keys in key order),
// granting no more than the quota, with the chain intact.
func testKeyClaimMany(t *testing.T, ss []pollwarden.Store) {
	const requests, ops = 4, 48
	c := quotaContract(requests, time.Hour)
	for i := range ops {
		create(t, ss[0], newOp(fmt.Sprintf("op-%02d", i)))
	}
	qp := func(id, owner string, now time.Time) pollwarden.ClaimParams { return quotaParams(c, id, owner, now) }
	res := claimMany(t, ss[0], []pollwarden.ClaimParams{qp("op-00", "a", t0), qp("op-01", "a", at(time.Minute))})
	if res[0].Err != nil || res[0].Lease == nil {
		t.Fatalf("first claim of the batch: %+v", res[0])
	}
	if r := res[1]; r.Err != nil || r.Lease != nil || r.Op == nil || r.Op.NextPollSource != pollwarden.DelaySharedQuota {
		t.Fatalf("second claim within the interval: %+v; want held, no lease", r)
	}
	if got := get(t, ss[0], "op-01"); got.StatusRequestsUsed != 0 || got.NextPollSource != pollwarden.DelaySharedQuota {
		t.Fatalf("held record: %+v", got)
	}
	verify(t, ss[0], "op-01", 2)
	var mu sync.Mutex
	granted := 1
	count := func(l *pollwarden.Lease) {
		if l != nil {
			mu.Lock()
			granted++
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { // batches of 6 on the first handle, taking every other operation
		for from := 2; from < ops; from += 12 {
			var ps []pollwarden.ClaimParams
			for i := from; i < min(from+12, ops); i += 2 {
				ps = append(ps, qp(fmt.Sprintf("op-%02d", i), "batch", at(time.Duration(i)*time.Hour/ops)))
			}
			mc := ss[0].(pollwarden.ManyClaimer)
			for _, r := range mc.OperationClaimMany(context.Background(), ps) {
				if r.Err != nil {
					t.Errorf("batch claim: %v", r.Err)
				}
				count(r.Lease)
			}
		}
	})
	for w := 1; w < len(ss); w++ {
		wg.Go(func() { // single claims of the others on other handles
			for i := 1 + 2*w; i < ops; i += 4 {
				_, l, err := quotaClaim(context.Background(), ss[w], c, fmt.Sprintf("op-%02d", i), fmt.Sprint("w", w), at(time.Duration(i)*time.Hour/ops))
				if err != nil {
					t.Errorf("single claim op-%02d: %v", i, err)
				}
				count(l)
			}
		})
	}
	wg.Wait()
	if granted > requests {
		t.Fatalf("%d claims granted in one window, quota %d", granted, requests)
	}
	ks, err := ss[1].KeyGet(t.Context(), "env:SHARED")
	if err != nil || ks.WindowUsed != granted {
		t.Fatalf("key row: %+v, %v; want %d used", ks, err, granted)
	}
	verifyStore(t, ss[0])
}
