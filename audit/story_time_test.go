package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestStoryAcrossMidnight: a wait that crosses midnight reads in order.
// The first line carries the date and the zone, a line on a new day its
// date; a time inside a line carries its date when it is not the line's
// day, so a deadline tomorrow never reads earlier than the start. Each
// poll is one line, and the deadline is told only when it changes.
func TestStoryAcrossMidnight(t *testing.T) {
	day := func(d, h, m, s int) *time.Time {
		x := time.Date(2026, 12, d, h, m, s, 0, time.UTC)
		return &x
	}
	approver := &pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}
	ev := func(kind pollwarden.EventKind, at *time.Time, d pollwarden.EventData) pollwarden.Event {
		return pollwarden.Event{Kind: kind, At: *at, Data: d}
	}
	dl := day(2, 0, 0, 30)
	events := []pollwarden.Event{
		ev(pollwarden.EventSubmitted, day(1, 23, 59, 50), pollwarden.EventData{ProviderJobID: "j1", DeadlineAt: dl, MaxRequests: 3, Detail: "max transport failures 3"}),
		ev(pollwarden.EventRequestSent, day(1, 23, 59, 50), pollwarden.EventData{RequestsUsed: 1, MaxRequests: 3, DeadlineAt: dl}),
		ev(pollwarden.EventResponseReceived, day(1, 23, 59, 51), pollwarden.EventData{HTTPStatus: 200, State: "queued", Decision: "wait",
			NextPollAt: day(2, 0, 0, 5), DelaySource: pollwarden.DelayLocalBackoff}),
		ev(pollwarden.EventStateChanged, day(1, 23, 59, 51), pollwarden.EventData{State: "queued"}),
		ev(pollwarden.EventRequestSent, day(2, 0, 0, 5), pollwarden.EventData{RequestsUsed: 2, MaxRequests: 3, DeadlineAt: dl}),
		ev(pollwarden.EventResponseReceived, day(2, 0, 0, 5), pollwarden.EventData{HTTPStatus: 503, RetryAfter: "20", FailuresUsed: 1, Decision: "wait",
			NextPollAt: day(2, 0, 0, 25), DelaySource: pollwarden.DelayRetryAfter}),
		ev(pollwarden.EventRequestSent, day(2, 0, 0, 25), pollwarden.EventData{RequestsUsed: 3, MaxRequests: 3, DeadlineAt: dl}),
		ev(pollwarden.EventResponseReceived, day(2, 0, 0, 26), pollwarden.EventData{HTTPStatus: 200, State: "running",
			Decision: "escalated request_budget_exhausted"}),
		ev(pollwarden.EventStateChanged, day(2, 0, 0, 26), pollwarden.EventData{State: "running", PrevState: "queued"}),
		ev(pollwarden.EventEscalated, day(2, 0, 0, 26), pollwarden.EventData{Reason: pollwarden.ReasonRequestBudgetExhausted,
			Detail: "every allowed status request was used: 3 of 3", RequestsUsed: 3, MaxRequests: 3,
			Options: []pollwarden.Option{{ID: "extend"}, {ID: "abandon"}}}),
		ev(pollwarden.EventDecision, day(2, 7, 42, 34), pollwarden.EventData{Actor: approver, Option: "extend",
			Decision: "extended to 2026-12-02T07:57:34Z with budget 7", DeadlineAt: day(2, 7, 57, 34), MaxRequests: 7}),
		ev(pollwarden.EventNextCheckScheduled, day(2, 7, 42, 34), pollwarden.EventData{NextPollAt: day(2, 7, 42, 34), DelaySource: pollwarden.DelayManualExtension}),
		ev(pollwarden.EventRequestSent, day(2, 7, 42, 34), pollwarden.EventData{RequestsUsed: 4, MaxRequests: 7, DeadlineAt: day(2, 7, 57, 34)}),
		ev(pollwarden.EventResponseReceived, day(2, 7, 42, 35), pollwarden.EventData{HTTPStatus: 200, State: "succeeded",
			Decision: "succeeded: success with a valid result"}),
		ev(pollwarden.EventStateChanged, day(2, 7, 42, 35), pollwarden.EventData{State: "succeeded", PrevState: "running"}),
		ev(pollwarden.EventSucceeded, day(2, 7, 42, 35), pollwarden.EventData{RequestsUsed: 4, MaxRequests: 7, Elapsed: "7h42m45s"}),
	}
	want := []string{
		"2026-12-01 23:59:50 UTC started watching job j1, deadline 2026-12-02 00:00:30, budget 3 (max transport failures 3)",
		"23:59:50 status request 1 of 3: state queued, next poll 2026-12-02 00:00:05 from local backoff",
		"2026-12-02 00:00:05 status request 2 of 3: received 503, Retry-After 20, transport failure 1, next poll 00:00:25 from provider guidance",
		"00:00:25 status request 3 of 3: state queued → running",
		"00:00:26 escalated request_budget_exhausted: every allowed status request was used: 3 of 3; 3 of 3 status requests used; options: extend, abandon",
		"07:42:34 alice (approver) decided extend: extended to 2026-12-02T07:57:34Z with budget 7",
		"07:42:34 next poll 07:42:34 from manual extension",
		"07:42:34 status request 4 of 7: state running → succeeded",
		"07:42:35 succeeded after 4 of 7 status requests, 7h42m45s elapsed",
	}
	got := Story(events, nil)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("story:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Told in another zone, the day changes where that zone's midnight
	// falls, and the zone is named once.
	tokyo := time.FixedZone("JST", 9*3600)
	got = Story(events, tokyo)
	if !strings.HasPrefix(got[0], "2026-12-02 08:59:50 JST started watching job j1, deadline 09:00:30,") {
		t.Errorf("first line in JST: %s", got[0])
	}
	for i, l := range got[1:] {
		if strings.Contains(l, "JST") || strings.Contains(l, "UTC ") {
			t.Errorf("line %d names the zone again: %s", i+1, l)
		}
		if strings.HasPrefix(l, "2026-") {
			t.Errorf("line %d repeats the date, though the day did not change in JST: %s", i+1, l)
		}
	}

	// A deadline that moves without a decision (a record written by an
	// older pollwarden) is told where it changes.
	moved := *day(2, 0, 10, 0)
	events[6].Data.DeadlineAt = &moved
	got = Story(events, nil)
	if got[3] != "00:00:25 status request 3 of 3, deadline 00:10:00: state queued → running" {
		t.Errorf("changed deadline: %s", got[3])
	}
}
