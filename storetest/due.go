package storetest

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// listIDs returns the ids OperationList gives for p, space-separated.
func listIDs(t *testing.T, s pollwarden.Store, p pollwarden.ListParams) string {
	t.Helper()
	ops, err := s.OperationList(t.Context(), p)
	if err != nil {
		t.Fatalf("OperationList(%+v): %v", p, err)
	}
	out := ""
	for _, op := range ops {
		out += op.ID + " "
	}
	return out
}

// testListDue: DueBefore selects waiting and cancelling operations (a
// cancelling one is still observed) due at or before it
// (the boundary instant included, whatever the zones), oldest due first,
// and Limit keeps the oldest.
func testListDue(t *testing.T, s pollwarden.Store) {
	for _, o := range []struct {
		id    string
		phase pollwarden.Phase
		next  time.Duration
	}{
		// Created in an order unrelated to due order, so that the
		// driver's creation order cannot pass for it.
		{"late", pollwarden.PhaseWaiting, 3 * time.Minute},
		{"early", pollwarden.PhaseWaiting, time.Minute},
		{"cancelling", pollwarden.PhaseCancelling, 90 * time.Second},
		{"escalated", pollwarden.PhaseEscalated, 0},
		{"middle", pollwarden.PhaseWaiting, 2 * time.Minute},
		{"succeeded", pollwarden.PhaseSucceeded, -time.Minute},
		{"future", pollwarden.PhaseWaiting, 10 * time.Minute},
		{"just-after", pollwarden.PhaseWaiting, 3*time.Minute + time.Nanosecond},
		{"oldest", pollwarden.PhaseWaiting, -time.Hour},
	} {
		op := newOp(o.id)
		op.Phase, op.NextPollAt = o.phase, at(o.next)
		create(t, s, op)
	}
	// The boundary is "late"'s instant, stated in another zone.
	boundary := at(3 * time.Minute).In(time.FixedZone("W", -5*3600))
	for _, tc := range []struct {
		name string
		p    pollwarden.ListParams
		want string
	}{
		{"oldest due first, boundary included", pollwarden.ListParams{DueBefore: boundary}, "oldest early cancelling middle late "},
		{"limit keeps the oldest", pollwarden.ListParams{DueBefore: boundary, Limit: 2}, "oldest early "},
		{"limit keeps a cancelling one", pollwarden.ListParams{DueBefore: boundary, Limit: 3}, "oldest early cancelling "},
		{"phase waiting agrees", pollwarden.ListParams{DueBefore: boundary, Phase: pollwarden.PhaseWaiting}, "oldest early middle late "},
		{"phase cancelling agrees", pollwarden.ListParams{DueBefore: boundary, Phase: pollwarden.PhaseCancelling}, "cancelling "},
		{"other phase excludes", pollwarden.ListParams{DueBefore: boundary, Phase: pollwarden.PhaseEscalated}, ""},
		{"one nanosecond later", pollwarden.ListParams{DueBefore: boundary.Add(time.Nanosecond)}, "oldest early cancelling middle late just-after "},
		{"one nanosecond earlier", pollwarden.ListParams{DueBefore: boundary.Add(-time.Nanosecond)}, "oldest early cancelling middle "},
		{"nothing due yet", pollwarden.ListParams{DueBefore: at(-2 * time.Hour)}, ""},
		{"everything observed", pollwarden.ListParams{DueBefore: at(24 * time.Hour)}, "oldest early cancelling middle late just-after future "},
	} {
		if got := listIDs(t, s, tc.p); got != tc.want {
			t.Errorf("%s: OperationList(DueBefore %v, Phase %q, Limit %d) = %q, want %q",
				tc.name, tc.p.DueBefore, tc.p.Phase, tc.p.Limit, got, tc.want)
		}
	}
	ops, err := s.OperationList(t.Context(), pollwarden.ListParams{DueBefore: boundary, Limit: 1})
	if err != nil || len(ops) != 1 {
		t.Fatalf("OperationList: %v, %d records", err, len(ops))
	}
	same(t, "listed due record", ops[0], get(t, s, "oldest"))
}

// testListDueAfterSave: a save moves an operation in the due order or out
// of it, as its new next poll time and phase say.
func testListDueAfterSave(t *testing.T, s pollwarden.Store) {
	for i, id := range []string{"a", "b", "c"} {
		op := newOp(id)
		op.NextPollAt = at(time.Duration(i) * time.Minute)
		create(t, s, op)
	}
	due := pollwarden.ListParams{DueBefore: at(5 * time.Minute)}
	if got, want := listIDs(t, s, due), "a b c "; got != want {
		t.Fatalf("before saves: %q, want %q", got, want)
	}
	a := get(t, s, "a")
	a.NextPollAt = at(4 * time.Minute) // polled: due again later
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: a, Now: t0}); err != nil {
		t.Fatalf("save a: %v", err)
	}
	b := get(t, s, "b")
	b.Phase, b.Reason = pollwarden.PhaseEscalated, pollwarden.ReasonDeadlineExceeded
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: b, Now: t0}); err != nil {
		t.Fatalf("save b: %v", err)
	}
	if got, want := listIDs(t, s, due), "c a "; got != want {
		t.Fatalf("after saves: %q, want %q", got, want)
	}
	if got, want := listIDs(t, s, pollwarden.ListParams{DueBefore: at(3 * time.Minute)}), "c "; got != want {
		t.Fatalf("after saves, due before +3m: %q, want %q", got, want)
	}
	c := get(t, s, "c")
	c.Phase = pollwarden.PhaseCancelling // a cancel was sent: still observed
	if err := s.OperationSave(t.Context(), pollwarden.SaveParams{Op: c, Now: t0}); err != nil {
		t.Fatalf("save c: %v", err)
	}
	if got, want := listIDs(t, s, due), "c a "; got != want {
		t.Fatalf("after c began cancelling: %q, want %q", got, want)
	}
}

// testListDueSkipsLeased: an operation whose lease is held at DueBefore is
// not listed as due work (a step is working on it; a claim could only be
// refused); from the lease's expiry instant, or once it is released, it
// is listed again.
func testListDueSkipsLeased(t *testing.T, s pollwarden.Store) {
	for _, id := range []string{"leased", "free"} {
		op := newOp(id)
		op.NextPollAt = at(-time.Minute)
		create(t, s, op)
	}
	_, l, err := claim(t, s, "leased", "a", t0, nil)
	if err != nil || l == nil {
		t.Fatalf("claim: %v, %v", l, err)
	}
	if got := listIDs(t, s, pollwarden.ListParams{DueBefore: t0}); got != "free " {
		t.Errorf("while leased: due %q, want only free", got)
	}
	if got := listIDs(t, s, pollwarden.ListParams{DueBefore: l.ExpiresAt}); got != "leased free " && got != "free leased " {
		t.Errorf("at the lease's expiry: due %q, want both", got)
	}
	if err := s.LeaseRelease(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if got := listIDs(t, s, pollwarden.ListParams{DueBefore: t0}); got != "leased free " && got != "free leased " {
		t.Errorf("after release: due %q, want both", got)
	}
}
