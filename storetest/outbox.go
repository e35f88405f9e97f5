package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// OutboxStore is what RunOutbox tests: a Store that keeps a webhook outbox.
type OutboxStore interface {
	pollwarden.Store
	pollwarden.Outbox
}

// RunOutbox runs the webhook outbox conformance suite (docs/webhooks.md).
// open must return a new, empty store for each call; RunOutbox closes it.
func RunOutbox(t *testing.T, open func(t *testing.T) OutboxStore) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, OutboxStore)
	}{
		{"CursorStartsUnset", testOutboxCursorUnset},
		{"EnqueueRoundTrip", testOutboxRoundTrip},
		{"EnqueueIdempotentPerEndpointAndKey", testOutboxIdempotent},
		{"EnqueueCursorConflict", testOutboxCursorConflict},
		{"ConcurrentEnqueueOneWins", testOutboxConcurrentEnqueue},
		{"EnqueueInvalidChangesNothing", testOutboxInvalid},
		{"ClaimDueAndEndpoints", testOutboxClaimDue},
		{"ClaimExclusive", testOutboxClaimExclusive},
		{"ConcurrentClaimersNeverShare", testOutboxConcurrentClaims},
		{"ClaimExpiresAndFences", testOutboxClaimExpiry},
		{"SettleRetryDeliveredDead", testOutboxSettle},
		{"RequeueSettledOnly", testOutboxRequeue},
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

func msg(key, endpoint string, pos int64, created time.Time) pollwarden.OutboxMessage {
	return pollwarden.OutboxMessage{ID: "msg_" + key, Key: key, Endpoint: endpoint, EventPos: pos, OperationID: "op-" + key,
		Type: "operation.escalated", Body: []byte(`{"type":"operation.escalated","k":"` + key + `"}` + "\x00\xff"), CreatedAt: created}
}

func enqueue(t *testing.T, s OutboxStore, from, to int64, msgs ...pollwarden.OutboxMessage) {
	t.Helper()
	if err := s.OutboxEnqueue(context.Background(), pollwarden.OutboxEnqueueParams{From: from, To: to, Messages: msgs}); err != nil {
		t.Fatalf("OutboxEnqueue %d→%d: %v", from, to, err)
	}
}

func list(t *testing.T, s OutboxStore, status pollwarden.OutboxStatus) []pollwarden.OutboxMessage {
	t.Helper()
	ms, err := s.OutboxList(context.Background(), pollwarden.OutboxListParams{Status: status})
	if err != nil {
		t.Fatalf("OutboxList: %v", err)
	}
	return ms
}

func claimOutbox(t *testing.T, s OutboxStore, owner string, now time.Time, limit int, endpoints ...string) []pollwarden.OutboxMessage {
	t.Helper()
	if len(endpoints) == 0 {
		endpoints = []string{"e1", "e2"}
	}
	ms, err := s.OutboxClaim(context.Background(), pollwarden.OutboxClaimParams{Owner: owner, Endpoints: endpoints,
		Now: now, TTL: time.Minute, Limit: limit})
	if err != nil {
		t.Fatalf("OutboxClaim: %v", err)
	}
	return ms
}

func keys(ms []pollwarden.OutboxMessage) string {
	var b bytes.Buffer
	for _, m := range ms {
		fmt.Fprintf(&b, "%s/%s ", m.Endpoint, m.Key)
	}
	return b.String()
}

func settle(s OutboxStore, m pollwarden.OutboxMessage, owner string, st pollwarden.OutboxStatus, now, next time.Time) error {
	return s.OutboxSettle(context.Background(), pollwarden.OutboxSettleParams{Seq: m.Seq, Owner: owner, Attempt: m.Attempts,
		Status: st, NextAttemptAt: next, LastStatus: 503, LastError: "HTTP 503", Now: now})
}

func cursor(t *testing.T, s OutboxStore) int64 {
	t.Helper()
	c, err := s.OutboxCursor(context.Background())
	if err != nil {
		t.Fatalf("OutboxCursor: %v", err)
	}
	return c
}

func testOutboxCursorUnset(t *testing.T, s OutboxStore) {
	if c := cursor(t, s); c != -1 {
		t.Fatalf("a new store's cursor is %d, want -1", c)
	}
	enqueue(t, s, -1, 0)
	if c := cursor(t, s); c != 0 {
		t.Fatalf("cursor %d after -1→0", c)
	}
}

func testOutboxRoundTrip(t *testing.T, s OutboxStore) {
	m := msg("a", "e1", 3, t0)
	enqueue(t, s, -1, 4, m)
	got := list(t, s, "")
	if len(got) != 1 {
		t.Fatalf("listed %d messages", len(got))
	}
	g := got[0]
	if g.Seq <= 0 || g.ID != m.ID || g.Key != m.Key || g.Endpoint != m.Endpoint || g.EventPos != 3 || g.OperationID != m.OperationID ||
		g.Type != m.Type || !bytes.Equal(g.Body, m.Body) || !g.CreatedAt.Equal(t0) || g.Status != pollwarden.OutboxPending ||
		g.Attempts != 0 || !g.NextAttemptAt.Equal(t0) || g.ClaimOwner != "" || g.ClaimExpiresAt != nil || g.SettledAt != nil {
		t.Fatalf("round trip: got %+v, stored %+v", g, m)
	}
}

func testOutboxIdempotent(t *testing.T, s OutboxStore) {
	enqueue(t, s, -1, 5, msg("a", "e1", 2, t0), msg("a", "e2", 2, t0))
	again := msg("a", "e1", 7, t0)
	again.Body = []byte("other bytes")
	enqueue(t, s, 5, 9, again, msg("b", "e1", 8, t0))
	got := list(t, s, "")
	if k := keys(got); k != "e1/a e2/a e1/b " {
		t.Fatalf("stored %q, want e1/a e2/a e1/b", k)
	}
	if bytes.Equal(got[0].Body, again.Body) || got[0].EventPos != 2 {
		t.Fatal("a second enqueue of (e1, a) replaced the first")
	}
	if c := cursor(t, s); c != 9 {
		t.Fatalf("cursor %d, want 9", c)
	}
}

func testOutboxCursorConflict(t *testing.T, s OutboxStore) {
	enqueue(t, s, -1, 3, msg("a", "e1", 2, t0))
	err := s.OutboxEnqueue(context.Background(), pollwarden.OutboxEnqueueParams{From: -1, To: 4,
		Messages: []pollwarden.OutboxMessage{msg("b", "e1", 4, t0)}})
	if !errors.Is(err, pollwarden.ErrConflict) {
		t.Fatalf("enqueue from a stale cursor: %v, want ErrConflict", err)
	}
	if c, k := cursor(t, s), keys(list(t, s, "")); c != 3 || k != "e1/a " {
		t.Fatalf("after the conflict: cursor %d, messages %q", c, k)
	}
}

func testOutboxConcurrentEnqueue(t *testing.T, s OutboxStore) {
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = s.OutboxEnqueue(context.Background(), pollwarden.OutboxEnqueueParams{From: -1, To: 10,
				Messages: []pollwarden.OutboxMessage{msg(fmt.Sprint("k", i), "e1", 10, t0)}})
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, pollwarden.ErrConflict):
			t.Fatalf("concurrent enqueue: %v", err)
		}
	}
	if got := list(t, s, ""); won != 1 || len(got) != 1 {
		t.Fatalf("%d enqueues won and %d messages stored, want 1 and 1", won, len(got))
	}
}

func testOutboxInvalid(t *testing.T, s OutboxStore) {
	enqueue(t, s, -1, 2)
	for name, p := range map[string]pollwarden.OutboxEnqueueParams{
		"backwards":    {From: 2, To: 1},
		"empty body":   {From: 2, To: 3, Messages: []pollwarden.OutboxMessage{{ID: "x", Key: "x", Endpoint: "e1", EventPos: 3, Type: "t", CreatedAt: t0}}},
		"out of range": {From: 2, To: 3, Messages: []pollwarden.OutboxMessage{msg("x", "e1", 2, t0)}},
	} {
		if err := s.OutboxEnqueue(context.Background(), p); !errors.Is(err, pollwarden.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if c, n := cursor(t, s), len(list(t, s, "")); c != 2 || n != 0 {
		t.Fatalf("a refused enqueue changed the store: cursor %d, %d messages", c, n)
	}
}

func testOutboxClaimDue(t *testing.T, s OutboxStore) {
	enqueue(t, s, -1, 3, msg("late", "e1", 1, at(time.Hour)), msg("a", "e2", 2, t0), msg("b", "e1", 3, t0))
	if got := claimOutbox(t, s, "A", at(-time.Second), 10); len(got) != 0 {
		t.Fatalf("claimed %q before anything was due", keys(got))
	}
	if got := claimOutbox(t, s, "A", t0, 10, "e2"); keys(got) != "e2/a " || got[0].Attempts != 1 || got[0].ClaimOwner != "A" ||
		got[0].ClaimExpiresAt == nil || !got[0].ClaimExpiresAt.Equal(at(time.Minute)) {
		t.Fatalf("claim for e2 only: %+v", got)
	}
	if got := claimOutbox(t, s, "A", at(time.Hour), 10, "e1"); keys(got) != "e1/b e1/late " {
		t.Fatalf("claim oldest due first: %q", keys(got))
	}
}

func testOutboxClaimExclusive(t *testing.T, s OutboxStore) {
	enqueue(t, s, -1, 3, msg("a", "e1", 1, t0), msg("b", "e1", 2, t0), msg("c", "e1", 3, t0))
	a := claimOutbox(t, s, "A", t0, 2)
	b := claimOutbox(t, s, "B", t0, 10)
	if keys(a) != "e1/a e1/b " || keys(b) != "e1/c " {
		t.Fatalf("A claimed %q, B %q", keys(a), keys(b))
	}
	if more := claimOutbox(t, s, "B", at(30*time.Second), 10); len(more) != 0 {
		t.Fatalf("claimed %q while every message was held", keys(more))
	}
}

func testOutboxConcurrentClaims(t *testing.T, s OutboxStore) {
	var msgs []pollwarden.OutboxMessage
	for i := range 20 {
		msgs = append(msgs, msg(fmt.Sprint("k", i), "e1", int64(i+1), t0))
	}
	enqueue(t, s, -1, 20, msgs...)
	var mu sync.Mutex
	seen := map[int64]string{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			owner := fmt.Sprint("owner-", w)
			for {
				got, err := s.OutboxClaim(context.Background(), pollwarden.OutboxClaimParams{Owner: owner, Endpoints: []string{"e1"},
					Now: t0, TTL: time.Minute, Limit: 3})
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, m := range got {
					if prev, ok := seen[m.Seq]; ok {
						t.Errorf("message %d claimed by %s and %s", m.Seq, prev, owner)
					}
					seen[m.Seq] = owner
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 20 {
		t.Fatalf("%d of 20 messages claimed", len(seen))
	}
}

func testOutboxClaimExpiry(t *testing.T, s OutboxStore) {
	enqueue(t, s, -1, 1, msg("a", "e1", 1, t0))
	a := claimOutbox(t, s, "A", t0, 1)
	if got := claimOutbox(t, s, "B", at(59*time.Second), 1); len(got) != 0 {
		t.Fatal("B took a claim before it expired")
	}
	b := claimOutbox(t, s, "B", at(time.Minute), 1)
	if len(a) != 1 || len(b) != 1 || b[0].Attempts != 2 || b[0].ClaimOwner != "B" {
		t.Fatalf("after expiry: A %+v, B %+v", a, b)
	}
	if err := settle(s, a[0], "A", pollwarden.OutboxDelivered, at(time.Minute), time.Time{}); !errors.Is(err, pollwarden.ErrLeaseLost) {
		t.Fatalf("A settled a message B had taken over: %v", err)
	}
	if err := settle(s, b[0], "B", pollwarden.OutboxDelivered, at(2*time.Minute), time.Time{}); err != nil {
		t.Fatalf("B settles: %v", err)
	}
	got := list(t, s, pollwarden.OutboxDelivered)
	if len(got) != 1 || got[0].SettledAt == nil || !got[0].SettledAt.Equal(at(2*time.Minute)) || got[0].ClaimOwner != "" {
		t.Fatalf("delivered: %+v", got)
	}
}

func testOutboxSettle(t *testing.T, s OutboxStore) {
	enqueue(t, s, -1, 1, msg("a", "e1", 1, t0))
	m := claimOutbox(t, s, "A", t0, 1)[0]
	if err := settle(s, m, "A", pollwarden.OutboxPending, t0, at(10*time.Minute)); err != nil {
		t.Fatalf("settle retry: %v", err)
	}
	p := list(t, s, pollwarden.OutboxPending)
	if len(p) != 1 || !p[0].NextAttemptAt.Equal(at(10*time.Minute)) || p[0].LastStatus != 503 || p[0].LastError != "HTTP 503" ||
		p[0].ClaimOwner != "" || p[0].SettledAt != nil {
		t.Fatalf("after a retry: %+v", p)
	}
	if err := settle(s, m, "A", pollwarden.OutboxDelivered, t0, time.Time{}); !errors.Is(err, pollwarden.ErrLeaseLost) {
		t.Fatalf("settling an attempt twice: %v, want ErrLeaseLost", err)
	}
	if got := claimOutbox(t, s, "A", at(9*time.Minute), 1); len(got) != 0 {
		t.Fatal("a retry was claimed before it was due")
	}
	m = claimOutbox(t, s, "B", at(10*time.Minute), 1)[0]
	if m.Attempts != 2 {
		t.Fatalf("attempts %d, want 2", m.Attempts)
	}
	if err := settle(s, m, "B", pollwarden.OutboxDead, at(10*time.Minute), time.Time{}); err != nil {
		t.Fatalf("settle dead: %v", err)
	}
	if got := claimOutbox(t, s, "B", at(24*time.Hour), 1); len(got) != 0 {
		t.Fatal("a dead message was claimed")
	}
	if d := list(t, s, pollwarden.OutboxDead); len(d) != 1 || d[0].Attempts != 2 {
		t.Fatalf("dead: %+v", d)
	}
	err := s.OutboxSettle(context.Background(), pollwarden.OutboxSettleParams{Seq: m.Seq, Owner: "B", Attempt: 2, Status: "lost", Now: t0})
	if !errors.Is(err, pollwarden.ErrInvalid) {
		t.Fatalf("unknown status: %v", err)
	}
}

// testOutboxRequeue: an operator's requeue makes a dead or delivered
// message due again with a fresh count of attempts, the same id and body;
// a pending message or an unknown seq is refused and nothing changes.
func testOutboxRequeue(t *testing.T, s OutboxStore) {
	ctx := context.Background()
	enqueue(t, s, -1, 2, msg("a", "e1", 1, t0), msg("b", "e1", 2, t0))
	ms := claimOutbox(t, s, "A", t0, 2)
	if err := settle(s, ms[0], "A", pollwarden.OutboxDead, t0, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.OutboxRequeue(ctx, ms[1].Seq, at(time.Minute)); !errors.Is(err, pollwarden.ErrConflict) {
		t.Fatalf("requeue of a pending (claimed) message: %v, want ErrConflict", err)
	}
	// b waits for a retry long after this test's claims.
	if err := settle(s, ms[1], "A", pollwarden.OutboxPending, t0, at(100*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.OutboxRequeue(ctx, ms[1].Seq, at(time.Minute)); !errors.Is(err, pollwarden.ErrConflict) {
		t.Fatalf("requeue of a message waiting for its retry: %v, want ErrConflict", err)
	}
	if err := s.OutboxRequeue(ctx, 999, at(time.Minute)); !errors.Is(err, pollwarden.ErrNotFound) {
		t.Fatalf("requeue of an unknown message: %v, want ErrNotFound", err)
	}
	if err := s.OutboxRequeue(ctx, ms[0].Seq, at(time.Hour)); err != nil {
		t.Fatalf("requeue of a dead message: %v", err)
	}
	if got := claimOutbox(t, s, "B", at(59*time.Minute), 2); len(got) != 0 {
		t.Fatalf("a requeued message was claimed before it was due: %+v", got)
	}
	got := claimOutbox(t, s, "B", at(time.Hour), 2)
	if len(got) != 1 || got[0].Seq != ms[0].Seq || got[0].Attempts != 1 || got[0].ID != ms[0].ID ||
		string(got[0].Body) != string(ms[0].Body) || got[0].SettledAt != nil {
		t.Fatalf("after the requeue: %+v", got)
	}
	if err := settle(s, got[0], "B", pollwarden.OutboxDelivered, at(time.Hour), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.OutboxRequeue(ctx, ms[0].Seq, at(2*time.Hour)); err != nil {
		t.Fatalf("requeue of a delivered message: %v", err)
	}
	if p := list(t, s, pollwarden.OutboxPending); len(p) != 2 {
		t.Fatalf("pending after the second requeue: %+v", p)
	}
}
