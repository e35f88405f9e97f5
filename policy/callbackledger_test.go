package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// ledgerEnd is operation id ending at a poll at now: the record as sent
// (woken by a callback or not) and as decided (succeeded).
func ledgerEnd(t *testing.T, c *pollwarden.ContractSpec, id string, now time.Time, woken bool) (reserved, decided *pollwarden.Operation, at time.Time) {
	t.Helper()
	reserved = pendingAt(t, c, now.Add(-time.Minute), now)
	reserved.ID = id
	if woken {
		reserved.NextPollSource = pollwarden.DelayCallback
	}
	decided = reserved.Clone()
	decided.Phase = pollwarden.PhaseSucceeded
	return reserved, decided, now
}

// TestCallbackLedgerCountsAnnouncedEndsWhenTheScheduleWouldHavePolled: an
// end a callback announced by waking its poll counts only once the
// operation's own schedule would have polled, so trust comes then and not
// at the callbacks' arrival; an end no callback announced counts at once
// and enough of them drop the trust; a callback that comes after the poll
// saw the end turns a silent end into an announced one.
func TestCallbackLedgerCountsAnnouncedEndsWhenTheScheduleWouldHavePolled(t *testing.T) {
	c := testContract()
	l := NewCallbackLedger()
	now := t0.Add(2 * time.Minute)
	own := now.Add(time.Minute) // when the operations' own schedule would have polled
	for i := range trustMinAnnounced {
		id := fmt.Sprintf("op-%d", i)
		waiting := pendingAt(t, c, now.Add(-time.Second), own)
		waiting.ID = id
		w := Callback(waiting, c, now)
		if !w.Woken {
			t.Fatalf("%s not woken: %s", id, w.Why)
		}
		l.Callback(waiting, w)
		l.Polled(ledgerEnd(t, c, id, now, true))
	}
	if l.Trusted(own.Add(-time.Second)) {
		t.Fatal("trusted before the operations' own schedule would have seen their ends")
	}
	if !l.Trusted(own) {
		t.Fatalf("not trusted after %d announced ends", trustMinAnnounced)
	}
	// Silent ends drop the trust once fewer than trustShare are announced.
	silent := 0
	for l.Trusted(own) {
		id := fmt.Sprintf("silent-%d", silent)
		l.Polled(ledgerEnd(t, c, id, own, false))
		silent++
		if silent > trustMinAnnounced {
			t.Fatal("silent ends never dropped the trust")
		}
	}
	if want := trustMinAnnounced/4 + 1; silent != want {
		t.Errorf("trust dropped after %d silent ends, want %d (share %.2f)", silent, want, trustShare)
	}
	// Their callbacks come late: announced after all, trusted again.
	for i := range silent {
		_, done, _ := ledgerEnd(t, c, fmt.Sprintf("silent-%d", i), own, false)
		l.Callback(done, CallbackWake{})
	}
	if !l.Trusted(own) {
		t.Error("late callbacks for every silent end did not restore the trust")
	}
	// A late callback for an end never counted silent changes nothing.
	_, other, _ := ledgerEnd(t, c, "never-seen", own, false)
	before := l.trust
	l.Callback(other, CallbackWake{})
	if l.trust != before {
		t.Error("a callback for an operation not counted silent changed the counts")
	}
}

// TestCallbackLedgerHoldsOnlyWhileTrusted: while untrusted a decided step
// is left as it is; once trusted a pending answer's next poll becomes the
// safety net, the response event says the same time, and an event says
// why. An operation still on the schedule chosen before is held at its
// wake-up, with the record to save first.
func TestCallbackLedgerHoldsOnlyWhileTrusted(t *testing.T) {
	c := testContract()
	l := NewCallbackLedger()
	now := t0.Add(2 * time.Minute)
	op := pendingAt(t, c, now, now.Add(10*time.Second))
	ra := now.Add(10 * time.Second)
	st := Step{Op: op, Events: []pollwarden.Event{newEvent(op, now, pollwarden.EventResponseReceived, pollwarden.EventData{NextPollAt: &ra})}}
	if got := l.Hold(st, c, now); got.Op != op || len(got.Events) != 1 {
		t.Fatal("untrusted: the step was changed")
	}
	if _, held := l.HoldWaiting(op, c, now); held {
		t.Fatal("untrusted: a waiting operation was held")
	}
	for i := range trustMinAnnounced {
		l.Polled(ledgerEnd(t, c, fmt.Sprintf("op-%d", i), now, true))
	}
	want, ok := CallbackHold(op, c, now, true)
	if !ok {
		t.Fatal("CallbackHold refused the fixture")
	}
	got := l.Hold(st, c, now)
	if !got.Op.NextPollAt.Equal(want) || !op.NextPollAt.Equal(ra) {
		t.Fatalf("held next poll %s (input now %s), want %s and the input untouched", got.Op.NextPollAt, op.NextPollAt, want)
	}
	if len(got.Events) != 2 || !got.Events[0].Data.NextPollAt.Equal(want) || !st.Events[0].Data.NextPollAt.Equal(ra) ||
		got.Events[1].Kind != pollwarden.EventNextCheckScheduled || !strings.Contains(got.Events[1].Data.Detail, "safety-net poll") {
		t.Fatalf("events %+v: want the response at the safety net and a next_check_scheduled saying why", got.Events)
	}
	g, held := l.HoldWaiting(op, c, now)
	if !held || g.Verdict != Wait || !g.Spread || !g.Until.Equal(want) || !g.Op.NextPollAt.Equal(want) || len(g.Events) != 1 {
		t.Fatalf("waiting operation: held %v verdict %d save %v until %s, want a Wait to save until %s", held, g.Verdict, g.Spread, g.Until, want)
	}
	if _, again := l.HoldWaiting(g.Op, c, now); again {
		t.Error("an operation already at its safety net was held again")
	}
}
