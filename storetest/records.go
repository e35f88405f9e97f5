package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// create stores op with one submitted event, failing the test on error.
func create(t *testing.T, s pollwarden.Store, op *pollwarden.Operation) {
	t.Helper()
	ev := []pollwarden.Event{{At: op.StartedAt, Kind: pollwarden.EventSubmitted,
		Data: pollwarden.EventData{ProviderJobID: op.ProviderJobID, DeadlineAt: &op.DeadlineAt}}}
	if err := s.OperationCreate(t.Context(), op, ev); err != nil {
		t.Fatalf("OperationCreate(%q): %v", op.ID, err)
	}
}

func get(t *testing.T, s pollwarden.Store, id string) *pollwarden.Operation {
	t.Helper()
	op, err := s.OperationGet(t.Context(), id)
	if err != nil {
		t.Fatalf("OperationGet(%q): %v", id, err)
	}
	return op
}

func events(t *testing.T, s pollwarden.Store, id string) []pollwarden.Event {
	t.Helper()
	evs, err := s.EventList(t.Context(), id)
	if err != nil {
		t.Fatalf("EventList(%q): %v", id, err)
	}
	return evs
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

func testCreateGetRoundTrip(t *testing.T, s pollwarden.Store) {
	op := fullOp("op-full")
	checkAllSet(t, op)
	want := op.Clone()
	create(t, s, op)
	if op.Version != 1 {
		t.Fatalf("after create op.Version = %d, want 1", op.Version)
	}
	want.Version = 1
	got := get(t, s, "op-full")
	same(t, "record", got, want)
	if got.StartedAt.Nanosecond() != t0.Nanosecond() || !got.StartedAt.Equal(t0) {
		t.Fatalf("StartedAt %v, want the instant %v to the nanosecond", got.StartedAt, t0)
	}
}

func testCreateNilPointers(t *testing.T, s pollwarden.Store) {
	op := newOp("op-min")
	op.ExpectedTerminal = nil
	create(t, s, op)
	got := get(t, s, "op-min")
	if got.BusinessDeadlineAt != nil || got.ProviderExpiresAt != nil || got.LastHTTPAt != nil ||
		got.FinishedAt != nil || got.Escalation != nil || got.Result != nil || got.ProviderError != nil || got.ExpectedTerminal != nil {
		t.Fatalf("nil fields came back set: %+v", got)
	}
	same(t, "record", got, op)
}

func testCreateExists(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	dup := newOp("op-1")
	dup.Contract = "other"
	ev := []pollwarden.Event{{At: t0, Kind: pollwarden.EventSubmitted}}
	wantErr(t, "second OperationCreate", s.OperationCreate(t.Context(), dup, ev), pollwarden.ErrExists)
	if dup.Version != 0 || ev[0].Seq != 0 || ev[0].Hash != "" {
		t.Fatalf("failed create changed its inputs: version %d, event %+v", dup.Version, ev[0])
	}
	if got := get(t, s, "op-1"); got.Contract != "report-export" {
		t.Fatalf("failed create overwrote the record: contract %q", got.Contract)
	}
	if n := len(events(t, s, "op-1")); n != 1 {
		t.Fatalf("failed create appended events: %d events, want 1", n)
	}
}

func testGetNotFound(t *testing.T, s pollwarden.Store) {
	_, err := s.OperationGet(t.Context(), "missing")
	wantErr(t, "OperationGet", err, pollwarden.ErrNotFound)
}

func testList(t *testing.T, s pollwarden.Store) {
	phases := []pollwarden.Phase{pollwarden.PhaseWaiting, pollwarden.PhaseEscalated, pollwarden.PhaseWaiting,
		pollwarden.PhaseSucceeded, pollwarden.PhaseEscalated}
	for i, ph := range phases {
		op := newOp(fmt.Sprintf("op-%d", i))
		op.Phase = ph
		// Creation order, not StartedAt, defines "newest": give the first
		// operation the latest start to tell the two apart.
		op.StartedAt = at(-time.Duration(i) * time.Minute)
		create(t, s, op)
	}
	ids := func(ops []*pollwarden.Operation, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("OperationList: %v", err)
		}
		out := ""
		for _, op := range ops {
			out += op.ID + " "
		}
		return out
	}
	ctx := t.Context()
	for _, tc := range []struct {
		p    pollwarden.ListParams
		want string
	}{
		{pollwarden.ListParams{}, "op-4 op-3 op-2 op-1 op-0 "},
		{pollwarden.ListParams{Phase: pollwarden.PhaseEscalated}, "op-4 op-1 "},
		{pollwarden.ListParams{Phase: pollwarden.PhaseWaiting, Limit: 1}, "op-2 "},
		{pollwarden.ListParams{Limit: 2}, "op-4 op-3 "},
		{pollwarden.ListParams{Phase: pollwarden.PhaseFailed}, ""},
	} {
		if got := ids(s.OperationList(ctx, tc.p)); got != tc.want {
			t.Errorf("OperationList(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
	list, _ := s.OperationList(ctx, pollwarden.ListParams{Limit: 1})
	same(t, "listed record", list[0], get(t, s, "op-4"))
}

func testSaveRoundTrip(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	op := get(t, s, "op-1")
	next := fullOp("op-1")
	next.Version = op.Version
	want := next.Clone()
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: next, Now: at(time.Minute)}); err != nil {
		t.Fatalf("OperationSave: %v", err)
	}
	if next.Version != 2 {
		t.Fatalf("after save op.Version = %d, want 2", next.Version)
	}
	want.Version = 2
	same(t, "saved record", get(t, s, "op-1"), want)
}

func testSaveConflict(t *testing.T, s pollwarden.Store) {
	create(t, s, newOp("op-1"))
	a, b := get(t, s, "op-1"), get(t, s, "op-1")
	a.StatusRequestsUsed = 1
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: a, Now: t0,
		Events: []pollwarden.Event{{At: t0, Kind: pollwarden.EventRequestSent}}}); err != nil {
		t.Fatalf("first save: %v", err)
	}
	b.StatusRequestsUsed = 7
	ev := []pollwarden.Event{{At: t0, Kind: pollwarden.EventRequestSent}}
	err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: b, Now: t0, Events: ev})
	wantErr(t, "save of a stale version", err, pollwarden.ErrConflict)
	if b.Version != 1 || ev[0].Seq != 0 || ev[0].Hash != "" {
		t.Fatalf("failed save changed its inputs: version %d, event %+v", b.Version, ev[0])
	}
	got := get(t, s, "op-1")
	if got.StatusRequestsUsed != 1 || got.Version != 2 {
		t.Fatalf("after conflict: used %d version %d, want 1 and 2", got.StatusRequestsUsed, got.Version)
	}
	if n := len(events(t, s, "op-1")); n != 2 {
		t.Fatalf("failed save appended events: %d events, want 2", n)
	}
	// Reloading resolves the conflict.
	b = get(t, s, "op-1")
	b.StatusRequestsUsed = 2
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: b, Now: t0}); err != nil {
		t.Fatalf("save after reload: %v", err)
	}
}

func testSaveNotFound(t *testing.T, s pollwarden.Store) {
	op := newOp("missing")
	op.Version = 1
	err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: op, Now: t0})
	wantErr(t, "OperationSave of an unknown id", err, pollwarden.ErrNotFound)
}
