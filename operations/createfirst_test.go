package operations_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/prober"
)

// firstSteps records what a create hands over and runs the step it is
// given at once, in the caller's goroutine; refuse makes Reserve say no.
type firstSteps struct {
	refuse   bool
	reserved []string
	canceled []string
	results  []controller.StepResult
}

func (f *firstSteps) Reserve(_ *contract.Loaded, id string) bool {
	if f.refuse {
		return false
	}
	f.reserved = append(f.reserved, id)
	return true
}

func (f *firstSteps) Start(op *pollwarden.Operation, step func(context.Context) (controller.StepResult, error)) {
	res, err := step(context.Background())
	if err != nil {
		panic(err)
	}
	f.results = append(f.results, res)
}

func (f *firstSteps) Cancel(id string) { f.canceled = append(f.canceled, id) }

// firstWorld is newWorld whose Service hands first steps to fs, over
// the world's store as wrap wraps it (nil: as it is).
func firstWorld(t *testing.T, fs *firstSteps, wrap func(pollwarden.Store) pollwarden.Store) *world {
	w := newWorld(t)
	var store pollwarden.Store = w.store
	if wrap != nil {
		store = wrap(w.store)
	}
	ctl := controller.New(controller.Options{Store: store, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: time.Now})})
	w.ops = operations.New(operations.Options{Controller: ctl, Contracts: w.set, FirstSteps: fs})
	return w
}

// A create due at once is answered with the record as created, whether
// its first step is claimed with it (FirstSteps) or not: the same
// answer; the claimed one's request went out once, after the create.
func TestCreateWithFirstStepAnswersAsBefore(t *testing.T) {
	ctx := context.Background()
	agent := token("agent", pollwarden.RoleAgent, "")
	req := operations.CreateRequest{OperationID: "op-1", Contract: "export", JobID: "run"}
	var answers []*pollwarden.Operation
	for _, fs := range []*firstSteps{nil, {}} {
		w := newWorld(t)
		if fs != nil {
			w = firstWorld(t, fs, nil)
		}
		op, created, err := w.ops.Create(ctx, operations.CreateParams{Caller: agent, CreateRequest: req, SameRequest: true})
		if err != nil || !created {
			t.Fatalf("create: %v, %v", created, err)
		}
		answers = append(answers, op)
		if fs == nil {
			continue
		}
		if !slices.Equal(fs.reserved, []string{"op-1"}) || len(fs.results) != 1 || !fs.results[0].Sent || len(fs.canceled) != 0 {
			t.Fatalf("first steps: reserved %v, ran %d (%+v), cancelled %v", fs.reserved, len(fs.results), fs.results, fs.canceled)
		}
		stored, _ := w.store.OperationGet(ctx, "op-1")
		if w.fp.Count("run") != 1 || stored.StatusRequestsUsed != 1 || stored.Version != 3 {
			t.Fatalf("after the first step: provider saw %d, used %d, version %d; want 1, 1, 3", w.fp.Count("run"), stored.StatusRequestsUsed, stored.Version)
		}
		// The same request again answers the stored record.
		again, created, err := w.ops.Create(ctx, operations.CreateParams{Caller: agent, CreateRequest: req, SameRequest: true})
		if err != nil || created || again.Version != 3 {
			t.Fatalf("the same request again: created %v, version %v, %v", created, again, err)
		}
	}
	a, b := answers[0].Clone(), answers[1].Clone()
	for _, op := range []*pollwarden.Operation{a, b} {
		// Each world's provider has its own URL: the contract's digests
		// and the fingerprint differ with it.
		op.StartedAt, op.DeadlineAt, op.NextPollAt, op.JitterFactor = time.Time{}, time.Time{}, time.Time{}, 0
		op.Fingerprint, op.ContractDigest, op.ContractFingerprint = "", nil, ""
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) || a.Version != 1 || a.StatusRequestsUsed != 0 {
		t.Fatalf("answers differ:\nwithout first step %+v\nwith first step    %+v", a, b)
	}
}

// Without a free slot the create keeps its old path (a create, then the
// scheduler's own claim); a create that loses its id after its read gives
// its slot back and is judged against the stored record.
func TestCreateWithoutSlotOrWithATakenID(t *testing.T) {
	ctx := context.Background()
	agent := token("agent", pollwarden.RoleAgent, "")
	fs := &firstSteps{refuse: true}
	w := firstWorld(t, fs, nil)
	req := operations.CreateRequest{OperationID: "op-1", Contract: "export", JobID: "run"}
	if _, created, err := w.ops.Create(ctx, operations.CreateParams{Caller: agent, CreateRequest: req}); err != nil || !created {
		t.Fatalf("create without a slot: %v, %v", created, err)
	}
	if stored, _ := w.store.OperationGet(ctx, "op-1"); stored.Version != 1 || w.fp.Count("run") != 0 {
		t.Fatalf("create without a slot claimed: version %d, provider saw %d", stored.Version, w.fp.Count("run"))
	}

	fs = &firstSteps{}
	rs := &readsStore{}
	w = firstWorld(t, fs, func(s pollwarden.Store) pollwarden.Store { rs.Store = s; return rs })
	if _, _, err := w.ops.Create(ctx, operations.CreateParams{Caller: agent, CreateRequest: req}); err != nil {
		t.Fatal(err)
	}
	rs.hide.Store(true)
	op, created, err := w.ops.Create(ctx, operations.CreateParams{Caller: agent, CreateRequest: req})
	if err != nil || created || op.Version != 3 {
		t.Fatalf("a create that lost its id: created %v, %+v, %v; want the stored record resumed", created, op, err)
	}
	// Each refused write gave its slot back: every slot held was either
	// run or given back.
	if len(fs.canceled) == 0 || len(fs.results) != 1 || len(fs.reserved) != len(fs.canceled)+len(fs.results) {
		t.Fatalf("slots: reserved %v, cancelled %v, ran %d; want the second create's slots given back", fs.reserved, fs.canceled, len(fs.results))
	}
}

// A create under the caller's own new id reads nothing before its write;
// a taken one is judged on the one read after its refused write (the
// resume then reads as it always did).
func TestNewCallerIDIsNotRead(t *testing.T) {
	w, rs := readsWorld(t)
	ctx := context.Background()
	agent := token("agent", pollwarden.RoleAgent, "")
	req := operations.CreateRequest{OperationID: "op-new", Contract: "export", JobID: "run"}
	if _, created, err := w.ops.Create(ctx, operations.CreateParams{Caller: agent, CreateRequest: req}); err != nil || !created {
		t.Fatalf("create: %v, %v", created, err)
	}
	if n := rs.gets.Load(); n != 0 {
		t.Fatalf("a create under a new id of the caller's read the store %d times, want none", n)
	}
	if _, created, err := w.ops.Create(ctx, operations.CreateParams{Caller: agent, CreateRequest: req}); err != nil || created {
		t.Fatalf("the same create again: created %v, %v; want a resume", created, err)
	}
	if n := rs.gets.Load(); n != 2 {
		t.Fatalf("a create under a taken id read the store %d times, want twice (the judged record, then the resume's own)", n)
	}
}
