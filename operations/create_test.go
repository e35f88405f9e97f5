package operations_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/prober"
)

// readsStore counts OperationGet calls and, while hide is set, answers
// ErrNotFound for a stored record, as a store does to a create whose read
// came just before another request's write.
type readsStore struct {
	pollwarden.Store
	gets atomic.Int32
	hide atomic.Bool
}

func (s *readsStore) OperationGet(ctx context.Context, id string) (*pollwarden.Operation, error) {
	s.gets.Add(1)
	if s.hide.CompareAndSwap(true, false) {
		return nil, pollwarden.ErrNotFound
	}
	return s.Store.OperationGet(ctx, id)
}

func readsWorld(t *testing.T) (*world, *readsStore) {
	w := newWorld(t)
	rs := &readsStore{Store: w.store}
	ctl := controller.New(controller.Options{Store: rs, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: time.Now})})
	w.ops = operations.New(operations.Options{Controller: ctl, Contracts: w.set})
	return w, rs
}

// TestTakenIDIsJudgedOnOneRead: a create whose id is taken by another job
// is refused as a Conflict, in the matcher's words, on the one read it
// made, through the CLI's rule (resume) and the API's (same request)
// alike; nothing is written or read again to tell Conflict from Invalid.
func TestTakenIDIsJudgedOnOneRead(t *testing.T) {
	w, rs := readsWorld(t)
	ctx := context.Background()
	agent := token("agent", pollwarden.RoleAgent, "")
	req := operations.CreateRequest{OperationID: "op-x", Contract: "export", JobID: "run"}
	if _, created, err := w.ops.Create(ctx, operations.CreateParams{Caller: agent, CreateRequest: req}); err != nil || !created {
		t.Fatalf("first create: created %v, %v", created, err)
	}
	req.JobID = "other"
	for _, same := range []bool{false, true} {
		rs.gets.Store(0)
		_, _, err := w.ops.Create(ctx, operations.CreateParams{Caller: agent, CreateRequest: req, SameRequest: same})
		p, ok := operations.AsProblems(err)
		if !ok || p.Kind != operations.Conflict || !strings.Contains(err.Error(), "cannot be resumed with this request: the job differs") {
			t.Fatalf("same request %v: %v, want a Conflict saying the job differs", same, err)
		}
		if n := rs.gets.Load(); n != 1 {
			t.Errorf("same request %v: %d reads of the record, want the one that judged it", same, n)
		}
	}
	op, err := w.store.OperationGet(ctx, "op-x")
	if err != nil || op.ProviderJobID != "run" || op.Version != 1 {
		t.Fatalf("stored %+v, %v: want job run untouched", op, err)
	}
}

// TestTakenIDBetweenReadAndWrite: when another request creates the id
// after this create read it free, the write answers ErrExists and the
// create judges the record that request stored with the same matcher:
// another job is refused in its words, the same job resumes.
func TestTakenIDBetweenReadAndWrite(t *testing.T) {
	w, rs := readsWorld(t)
	ctx := context.Background()
	agent := token("agent", pollwarden.RoleAgent, "")
	req := operations.CreateRequest{OperationID: "op-r", Contract: "export", JobID: "run"}
	if _, _, err := w.ops.Create(ctx, operations.CreateParams{Caller: agent, CreateRequest: req}); err != nil {
		t.Fatal(err)
	}
	rs.hide.Store(true)
	other := req
	other.JobID = "other"
	if _, _, err := w.ops.Create(ctx, operations.CreateParams{Caller: agent, CreateRequest: other}); !strings.Contains(fmtErr(err), "the job differs") {
		t.Fatalf("another job under an id taken meanwhile: %v, want the matcher's refusal", err)
	}
	rs.hide.Store(true)
	op, created, err := w.ops.Create(ctx, operations.CreateParams{Caller: agent, CreateRequest: req})
	if err != nil || created || op.ProviderJobID != "run" {
		t.Fatalf("the same job under an id taken meanwhile: %+v created %v, %v; want the stored one resumed", op, created, err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
