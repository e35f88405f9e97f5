package operations_test

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/prober"
)

// listsStore counts OperationList calls.
type listsStore struct {
	pollwarden.Store
	lists atomic.Int32
}

func (s *listsStore) OperationList(ctx context.Context, p pollwarden.ListParams) ([]*pollwarden.Operation, error) {
	s.lists.Add(1)
	return s.Store.OperationList(ctx, p)
}

// TestEarlierOperationIsOneQuery: a create under a derived id looks for
// an unfinished operation of the same job under an earlier contract file
// with one list of the unfinished phases, not one query per phase.
func TestEarlierOperationIsOneQuery(t *testing.T) {
	w := newWorld(t)
	ls := &listsStore{Store: w.store}
	ctl := controller.New(controller.Options{Store: ls, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: time.Now})})
	ops := operations.New(operations.Options{Controller: ctl, Contracts: w.set})
	_, created, err := ops.Create(context.Background(), operations.CreateParams{Caller: token("agent", pollwarden.RoleAgent, ""),
		CreateRequest: operations.CreateRequest{Contract: "export", JobID: "run"}})
	if err != nil || !created {
		t.Fatalf("create: created %v, %v", created, err)
	}
	if n := ls.lists.Load(); n != 1 {
		t.Fatalf("%d list queries for one create, want 1", n)
	}
}
