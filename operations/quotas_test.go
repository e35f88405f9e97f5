package operations_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/prober"
)

// keysStore answers KeyList with rows set by the test and marks the
// operations it names as held by their key, as the claims of other
// processes would have left them.
type keysStore struct {
	pollwarden.Store
	rows []pollwarden.KeyState
	held map[string]pollwarden.DelaySource
}

func (s *keysStore) KeyList(context.Context) ([]pollwarden.KeyState, error) { return s.rows, nil }

func (s *keysStore) OperationList(ctx context.Context, p pollwarden.ListParams) ([]*pollwarden.Operation, error) {
	ops, err := s.Store.OperationList(ctx, p)
	for _, op := range ops {
		if src, ok := s.held[op.ID]; ok {
			op.NextPollSource = src
		}
	}
	return ops, err
}

// TestQuotasShowEachKey: the quotas view gives, for each key, the limit,
// the requests used in the current window (none once it ended), the
// provider's last count and reset, a hold still running, and the
// operations held by the key (shared_quota or provider_incident, not a
// plain backoff), most urgent first, found by the contract each runs
// under. Only an approver (or the store file's holder) reads it.
func TestQuotasShowEachKey(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	now := time.Now()
	ks := &keysStore{Store: w.store, held: map[string]pollwarden.DelaySource{}}
	ctl := controller.New(controller.Options{Store: ks, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: time.Now})})
	svc := operations.New(operations.Options{Controller: ctl, Contracts: w.set})
	approver := token("alice", pollwarden.RoleApprover, "")
	for _, c := range []struct {
		id   string
		prio int
		src  pollwarden.DelaySource
		as   operations.Caller
	}{
		{"q-low", 8, pollwarden.DelaySharedQuota, token("bot", pollwarden.RoleAgent, "")},
		{"q-urgent", 1, pollwarden.DelayProviderIncident, approver},
		{"q-default", 0, pollwarden.DelaySharedQuota, token("bot", pollwarden.RoleAgent, "")},
		{"q-free", 0, "", token("bot", pollwarden.RoleAgent, "")},
	} {
		req := operations.CreateRequest{OperationID: c.id, Contract: "export", JobID: c.id}
		if c.prio != 0 {
			req.Priority = intp(c.prio)
		}
		if _, _, err := svc.Create(ctx, operations.CreateParams{Caller: c.as, CreateRequest: req}); err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		if c.src != "" {
			ks.held[c.id] = c.src
		}
	}
	ks.rows = []pollwarden.KeyState{
		{Key: "export", Requests: 10, Per: time.Minute, WindowStart: now.Add(-10 * time.Second), WindowUsed: 7,
			Remaining: 42, RemainingAt: now.Add(-time.Second), ResetAt: now.Add(50 * time.Second),
			HoldUntil: now.Add(30 * time.Second), HoldWhy: "429 from operation q-low",
			Waiting: []pollwarden.KeyWaiter{{Priority: 8, Owner: "bot", Count: 1, Until: now.Add(time.Minute)}, {Priority: 5, Owner: "gone", Count: 3, Until: now.Add(-time.Second)}}},
		{Key: "env:OLD_TOKEN", Requests: 100, Per: time.Hour, WindowStart: now.Add(-2 * time.Hour), WindowUsed: 99, Remaining: -1,
			HoldUntil: now.Add(-time.Minute)},
	}
	if _, err := svc.Quotas(ctx, token("bot", pollwarden.RoleAgent, ""), now); operations.KindOf(err) != operations.Forbidden {
		t.Fatalf("an agent read the quotas: %v, want forbidden", err)
	}
	views, err := svc.Quotas(ctx, approver, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 2 || views[0].Key != "env:OLD_TOKEN" || views[1].Key != "export" {
		t.Fatalf("keys %+v, want env:OLD_TOKEN then export", views)
	}
	old, exp := views[0], views[1]
	if old.Used != 0 || old.Remaining != nil || old.HeldUntil != nil || old.Waiting != 0 {
		t.Errorf("a key whose window and hold ended: %+v, want nothing used, held or read", old)
	}
	if exp.Limit != 10 || exp.Per != "1m" || exp.Used != 7 || exp.Remaining == nil || *exp.Remaining != 42 ||
		exp.ResetAt == nil || exp.HeldUntil == nil || !strings.Contains(exp.HeldBecause, "429") {
		t.Errorf("export: %+v", exp)
	}
	var ids []string
	for _, o := range exp.WaitingOperations {
		ids = append(ids, o.OperationID)
	}
	if exp.Waiting != 3 || strings.Join(ids, ",") != "q-urgent,q-default,q-low" {
		t.Errorf("waiting %d %v, want the three held, most urgent first", exp.Waiting, ids)
	}
	if len(exp.WaitingByOwner) != 1 || exp.WaitingByOwner[0].Owner != "bot" {
		t.Errorf("waiting by owner %+v, want only the entry still counting", exp.WaitingByOwner)
	}
	local := operations.Caller{Caller: token("me", pollwarden.RoleAgent, "").Caller, Local: true}
	if _, err := svc.Quotas(ctx, local, now); err != nil {
		t.Errorf("the store file's holder: %v", err)
	}
	b, _ := json.Marshal(views)
	for _, field := range []string{`"limit":10`, `"requests_used":7`, `"provider_remaining":42`, `"provider_remaining":null`, `"waiting":3`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("JSON lacks %s: %s", field, b)
		}
	}
}
