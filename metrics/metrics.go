// Package metrics turns what the controller and the scheduler observe into
// Prometheus series on a registry it is given, never the global default
// one, so that two daemons in one process (tests, an embedder) do not
// collide. It implements controller.Observer and scheduler.Observer; those
// packages import no Prometheus code.
//
// The series read the audit events as saved: a status code, a delay source,
// an escalation reason or an outcome is counted once the change that
// records it is in the store. Operations by phase and API requests are
// defined by package httpapi on the same registry; docs/metrics.md lists
// them all.
package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pollwarden/pollwarden"
)

// Metrics holds the collectors. Its methods are safe for concurrent use
// and never block.
type Metrics struct {
	statusRequests *prometheus.CounterVec
	nextPollSource *prometheus.CounterVec
	escalations    *prometheus.CounterVec
	outcomes       *prometheus.CounterVec
	leaseConflicts prometheus.Counter
	step           prometheus.Histogram
	lateness       prometheus.Histogram
}

// New defines the collectors on reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		statusRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pollwarden_status_requests_total",
			Help: "Status requests answered, by contract and HTTP status code, or by transport failure class (timeout, connection_refused, ...) when no answer came.",
		}, []string{"contract", "code"}),
		nextPollSource: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pollwarden_next_poll_source_total",
			Help: "Next status requests scheduled, by who chose the time: provider_retry_after, provider_poll_hint, local_backoff, manual_extension.",
		}, []string{"source"}),
		escalations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pollwarden_escalations_total",
			Help: "Operations escalated to a person, by reason.",
		}, []string{"reason"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pollwarden_outcomes_total",
			Help: "Operations that reached an end (succeeded, failed, cancelled, expired, escalated), by that end.",
		}, []string{"outcome"}),
		leaseConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pollwarden_lease_conflicts_total",
			Help: "Steps that found the operation's lease held by another owner and sent nothing.",
		}),
		step: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pollwarden_step_seconds",
			Help:    "Duration of controller steps that sent a status request: lease, request, persistence.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pollwarden_scheduling_lateness_seconds",
			Help:    "How long after its next_poll_at the scheduler started the step of a due operation.",
			Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 15, 60, 300},
		}),
	}
	reg.MustRegister(m.statusRequests, m.nextPollSource, m.escalations, m.outcomes, m.leaseConflicts, m.step, m.lateness)
	return m
}

// Saved implements controller.Observer: it counts what the events of one
// saved change record.
func (m *Metrics) Saved(op *pollwarden.Operation, events []pollwarden.Event) {
	escalated := false
	for _, ev := range events {
		if ev.Kind == pollwarden.EventEscalated {
			escalated = true
		}
	}
	outcome := ""
	for _, ev := range events {
		d := ev.Data
		switch ev.Kind {
		case pollwarden.EventResponseReceived:
			m.statusRequests.WithLabelValues(op.Contract, Code(d)).Inc()
			// A source given with an escalation (a next time at or past
			// the deadline) schedules nothing.
			if d.DelaySource != "" && !escalated {
				m.nextPollSource.WithLabelValues(string(d.DelaySource)).Inc()
			}
		case pollwarden.EventNextCheckScheduled:
			if d.DelaySource != "" {
				m.nextPollSource.WithLabelValues(string(d.DelaySource)).Inc()
			}
		case pollwarden.EventEscalated:
			m.escalations.WithLabelValues(string(d.Reason)).Inc()
			outcome = string(pollwarden.PhaseEscalated)
		case pollwarden.EventSucceeded:
			outcome = string(pollwarden.PhaseSucceeded)
		case pollwarden.EventFinished:
			outcome = string(op.Phase)
		case pollwarden.EventDecision, pollwarden.EventAction:
			// abandon closes as failed; a cancel that worked, as cancelled.
			if op.Phase.Finished() {
				outcome = string(op.Phase)
			}
		}
	}
	if outcome != "" {
		m.outcomes.WithLabelValues(outcome).Inc()
	}
}

// Code is the code label of a response_received event: the HTTP status,
// or the transport failure class when no answer came.
func Code(d pollwarden.EventData) string {
	switch {
	case d.Transport != "":
		return d.Transport
	case d.HTTPStatus == 0:
		return pollwarden.TransportOther
	}
	return strconv.Itoa(d.HTTPStatus)
}

// StepDone implements controller.Observer.
func (m *Metrics) StepDone(_ *pollwarden.Operation, took time.Duration) {
	m.step.Observe(took.Seconds())
}

// LeaseConflict implements controller.Observer.
func (m *Metrics) LeaseConflict(string) { m.leaseConflicts.Inc() }

// Lateness implements scheduler.Observer.
func (m *Metrics) Lateness(d time.Duration) { m.lateness.Observe(d.Seconds()) }
