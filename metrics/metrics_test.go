package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/scheduler"
)

var (
	_ controller.Observer = (*Metrics)(nil)
	_ scheduler.Observer  = (*Metrics)(nil)
)

func ev(kind pollwarden.EventKind, d pollwarden.EventData) pollwarden.Event {
	return pollwarden.Event{Kind: kind, Data: d}
}

func op(phase pollwarden.Phase) *pollwarden.Operation {
	return &pollwarden.Operation{ID: "op1", Contract: "export", Phase: phase}
}

func TestSavedCountsCodesSourcesEscalationsOutcomes(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)

	// A 200 that schedules the next poll from the provider's hint.
	m.Saved(op(pollwarden.PhaseWaiting), []pollwarden.Event{
		ev(pollwarden.EventResponseReceived, pollwarden.EventData{HTTPStatus: 200, DelaySource: pollwarden.DelayPollHint}),
	})
	// A 429 with Retry-After.
	m.Saved(op(pollwarden.PhaseWaiting), []pollwarden.Event{
		ev(pollwarden.EventResponseReceived, pollwarden.EventData{HTTPStatus: 429, DelaySource: pollwarden.DelayRetryAfter}),
	})
	// A timeout, then local backoff.
	m.Saved(op(pollwarden.PhaseWaiting), []pollwarden.Event{
		ev(pollwarden.EventResponseReceived, pollwarden.EventData{Transport: pollwarden.TransportTimeout, DelaySource: pollwarden.DelayLocalBackoff}),
	})
	// A 200 whose next time is past the deadline: escalated, nothing scheduled.
	m.Saved(op(pollwarden.PhaseEscalated), []pollwarden.Event{
		ev(pollwarden.EventResponseReceived, pollwarden.EventData{HTTPStatus: 200, DelaySource: pollwarden.DelayLocalBackoff}),
		ev(pollwarden.EventEscalated, pollwarden.EventData{Reason: pollwarden.ReasonDeadlineExceeded}),
	})
	// The approver extends it.
	m.Saved(op(pollwarden.PhaseWaiting), []pollwarden.Event{
		ev(pollwarden.EventDecision, pollwarden.EventData{Option: pollwarden.OptionExtend}),
		ev(pollwarden.EventNextCheckScheduled, pollwarden.EventData{DelaySource: pollwarden.DelayManualExtension}),
	})
	// Budget exhausted.
	m.Saved(op(pollwarden.PhaseEscalated), []pollwarden.Event{
		ev(pollwarden.EventResponseReceived, pollwarden.EventData{HTTPStatus: 200}),
		ev(pollwarden.EventEscalated, pollwarden.EventData{Reason: pollwarden.ReasonRequestBudgetExhausted}),
	})
	// Abandoned: failed.
	m.Saved(op(pollwarden.PhaseFailed), []pollwarden.Event{
		ev(pollwarden.EventDecision, pollwarden.EventData{Option: pollwarden.OptionAbandon}),
	})
	// Inspect keeps it escalated: no new outcome.
	m.Saved(op(pollwarden.PhaseEscalated), []pollwarden.Event{
		ev(pollwarden.EventDecision, pollwarden.EventData{Option: pollwarden.OptionInspect}),
	})
	// Success and a provider-reported failure.
	m.Saved(op(pollwarden.PhaseSucceeded), []pollwarden.Event{
		ev(pollwarden.EventResponseReceived, pollwarden.EventData{HTTPStatus: 200}),
		ev(pollwarden.EventSucceeded, pollwarden.EventData{Decision: "succeeded"}),
	})
	m.Saved(op(pollwarden.PhaseExpired), []pollwarden.Event{
		ev(pollwarden.EventResponseReceived, pollwarden.EventData{HTTPStatus: 200}),
		ev(pollwarden.EventFinished, pollwarden.EventData{Decision: "expired"}),
	})
	// A submission counts nothing.
	m.Saved(op(pollwarden.PhaseWaiting), []pollwarden.Event{ev(pollwarden.EventSubmitted, pollwarden.EventData{})})

	for _, c := range []struct {
		c    prometheus.Collector
		want float64
	}{
		{m.statusRequests.WithLabelValues("export", "200"), 5},
		{m.statusRequests.WithLabelValues("export", "429"), 1},
		{m.statusRequests.WithLabelValues("export", "timeout"), 1},
		{m.nextPollSource.WithLabelValues("provider_poll_hint"), 1},
		{m.nextPollSource.WithLabelValues("provider_retry_after"), 1},
		{m.nextPollSource.WithLabelValues("local_backoff"), 1},
		{m.nextPollSource.WithLabelValues("manual_extension"), 1},
		{m.escalations.WithLabelValues("deadline_exceeded"), 1},
		{m.escalations.WithLabelValues("request_budget_exhausted"), 1},
		{m.outcomes.WithLabelValues("escalated"), 2},
		{m.outcomes.WithLabelValues("failed"), 1},
		{m.outcomes.WithLabelValues("succeeded"), 1},
		{m.outcomes.WithLabelValues("expired"), 1},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%v: got %v, want %v", c.c.(prometheus.Metric).Desc(), got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.statusRequests); n != 3 {
		t.Errorf("status request series: %d, want 3", n)
	}
	if n := testutil.CollectAndCount(m.outcomes); n != 4 {
		t.Errorf("outcome series: %d, want 4", n)
	}
}

func TestLeaseConflictsAndHistograms(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.LeaseConflict("a")
	m.LeaseConflict("b")
	m.StepDone(op(pollwarden.PhaseWaiting), 120*time.Millisecond)
	m.Lateness(2 * time.Second)
	m.Lateness(0)
	if got := testutil.ToFloat64(m.leaseConflicts); got != 2 {
		t.Errorf("lease conflicts: %v", got)
	}
	want := `
# HELP pollwarden_scheduling_lateness_seconds How long after its next_poll_at the scheduler started the step of a due operation.
# TYPE pollwarden_scheduling_lateness_seconds histogram
pollwarden_scheduling_lateness_seconds_bucket{le="0.001"} 1
pollwarden_scheduling_lateness_seconds_bucket{le="0.005"} 1
pollwarden_scheduling_lateness_seconds_bucket{le="0.01"} 1
pollwarden_scheduling_lateness_seconds_bucket{le="0.05"} 1
pollwarden_scheduling_lateness_seconds_bucket{le="0.1"} 1
pollwarden_scheduling_lateness_seconds_bucket{le="0.25"} 1
pollwarden_scheduling_lateness_seconds_bucket{le="0.5"} 1
pollwarden_scheduling_lateness_seconds_bucket{le="1"} 1
pollwarden_scheduling_lateness_seconds_bucket{le="2.5"} 2
pollwarden_scheduling_lateness_seconds_bucket{le="5"} 2
pollwarden_scheduling_lateness_seconds_bucket{le="15"} 2
pollwarden_scheduling_lateness_seconds_bucket{le="60"} 2
pollwarden_scheduling_lateness_seconds_bucket{le="300"} 2
pollwarden_scheduling_lateness_seconds_bucket{le="+Inf"} 2
pollwarden_scheduling_lateness_seconds_sum 2
pollwarden_scheduling_lateness_seconds_count 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "pollwarden_scheduling_lateness_seconds"); err != nil {
		t.Error(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP pollwarden_lease_conflicts_total Steps that found the operation's lease held by another owner and sent nothing.
# TYPE pollwarden_lease_conflicts_total counter
pollwarden_lease_conflicts_total 2
`), "pollwarden_lease_conflicts_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.step); n != 1 {
		t.Errorf("step histogram series: %d", n)
	}
}

// Two registries, two Metrics: nothing global.
func TestNoGlobalState(t *testing.T) {
	a, b := New(prometheus.NewRegistry()), New(prometheus.NewRegistry())
	a.LeaseConflict("x")
	if testutil.ToFloat64(b.leaseConflicts) != 0 {
		t.Fatal("registries share state")
	}
}
