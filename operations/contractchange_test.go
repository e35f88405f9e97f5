package operations_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
)

// TestAdoptionWaitsForThePoller: an edit that only lowers limits is not
// taken up while another process holds the operation's lease (mid
// request): the create is refused in words, and the record and its story
// are left as they were.
func TestAdoptionWaitsForThePoller(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	local := operations.Caller{Local: true, Owner: "cli:bob"}
	req := operations.CreateRequest{Contract: "export", JobID: "run"}
	op, _, err := w.ops.Create(ctx, operations.CreateParams{Caller: local, CreateRequest: req})
	if err != nil {
		t.Fatal(err)
	}
	if _, lease, err := w.store.OperationClaim(ctx, pollwarden.ClaimParams{OperationID: op.ID, Owner: "other", Now: time.Now(), TTL: time.Minute,
		Change: func(o *pollwarden.Operation) (*pollwarden.Operation, []pollwarden.Event) { return o, nil }}); err != nil || lease == nil {
		t.Fatalf("claim: %v %v", lease, err)
	}
	path := filepath.Join(w.set.Dir(), "export.yaml")
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "max_status_requests: 5", "max_status_requests: 4", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.set.Reload(); err != nil {
		t.Fatal(err)
	}
	before, _ := w.store.EventList(ctx, op.ID)
	_, _, err = w.ops.Create(ctx, operations.CreateParams{Caller: local, CreateRequest: req})
	p, ok := operations.AsProblems(err)
	if !ok || p.Kind != operations.Conflict || !strings.Contains(p.Error(), "being polled by another process") {
		t.Fatalf("got %v, want a conflict saying another process polls it", err)
	}
	after, _ := w.store.EventList(ctx, op.ID)
	stored, _ := w.store.OperationGet(ctx, op.ID)
	if len(after) != len(before) || stored.MaxStatusRequests != 5 {
		t.Fatalf("events %d → %d, budget %d: the refusal changed the record", len(before), len(after), stored.MaxStatusRequests)
	}
}
