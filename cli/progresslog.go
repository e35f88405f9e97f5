package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// quietGap is the longest a progress log stays silent while nothing
// happens. CI systems kill a step after 10 silent minutes (some after 5),
// and the spec promises a line at least every 5 minutes; 4 leaves room
// for a slow status request between two looks at the clock.
const quietGap = 4 * time.Minute

// progressLog is wait's and submit's progress when stderr is not a
// terminal (a CI log, a file, a pipe): one timestamped line for each
// status request and each phase change, and a "still waiting" line when
// nothing has been written for quietGap, so a no-output timeout never
// kills a long wait. A nil *progressLog does nothing, like liveLine.
type progressLog struct {
	w       io.Writer
	now     func() time.Time
	lastAt  time.Time
	started bool
	first   pollwarden.Operation // the record as the wait found it
	phase   pollwarden.Phase
	used    int
	fails   int
}

// newProgressLog starts the log from the operation as the wait found it,
// so that only what this wait does is written.
func newProgressLog(w io.Writer, now func() time.Time, op *pollwarden.Operation) *progressLog {
	return &progressLog{w: w, now: now, first: *op, phase: op.Phase, used: op.StatusRequestsUsed, fails: op.TransportFailuresUsed}
}

// update is controller.Progress: told about once a second while waiting.
func (p *progressLog) update(op *pollwarden.Operation, next time.Time) {
	if p == nil {
		return
	}
	now := p.now()
	p.start(now)
	switch {
	case p.changed(op):
		p.record(op, now, next, true)
	case now.Sub(p.lastAt) >= quietGap:
		p.line(now, "%s still waiting: state %s, %s, %s of %s elapsed; %s",
			display.Value(op.ID), stateText(op), budgetText(op), clockDur(now.Sub(op.StartedAt)),
			clockDur(op.DeadlineAt.Sub(op.StartedAt)), nextText(op, next, now))
	}
}

// finish writes the last status request and the phase the wait ended in.
func (p *progressLog) finish(op *pollwarden.Operation) {
	if p == nil || op == nil {
		return
	}
	if p.changed(op) {
		now := p.now()
		p.start(now)
		p.record(op, now, time.Time{}, false)
	}
}

func (p *progressLog) start(now time.Time) {
	if p.started {
		return
	}
	p.started = true
	op := &p.first
	verb, job := "started", "job "+display.Value(op.ProviderJobID)
	if p.used > 0 {
		verb = "resumed"
	}
	if op.ProviderJobID == "" {
		job = "its job"
	}
	p.line(now, "%s %s watching %s (contract %s): deadline %s, %s",
		display.Value(op.ID), verb, job, display.Value(op.Contract), op.DeadlineAt.UTC().Format(time.RFC3339), budgetText(op))
}

func (p *progressLog) changed(op *pollwarden.Operation) bool {
	return op.Phase != p.phase || op.StatusRequestsUsed != p.used || op.TransportFailuresUsed != p.fails
}

// record writes the status request(s) made since the last line and, when
// the phase moved, the phase change.
func (p *progressLog) record(op *pollwarden.Operation, now, next time.Time, waiting bool) {
	if op.StatusRequestsUsed != p.used || op.TransportFailuresUsed != p.fails {
		s := fmt.Sprintf("%s status request %d/%d: state %s, %s",
			display.Value(op.ID), op.StatusRequestsUsed, op.MaxStatusRequests, stateText(op), lastHTTPText(op))
		if op.TransportFailuresUsed > 0 {
			s += fmt.Sprintf(", transport failures %d/%d", op.TransportFailuresUsed, op.MaxTransportFailures)
		}
		if waiting && op.Phase == pollwarden.PhaseWaiting {
			s += "; " + nextText(op, next, now)
		}
		p.line(now, "%s", s)
	}
	if op.Phase != p.phase {
		s := fmt.Sprintf("%s %s → %s", display.Value(op.ID), p.phase, op.Phase)
		if op.Reason != "" {
			s += " " + string(op.Reason)
		}
		p.line(now, "%s", s)
	}
	p.phase, p.used, p.fails = op.Phase, op.StatusRequestsUsed, op.TransportFailuresUsed
}

func (p *progressLog) line(now time.Time, format string, args ...any) {
	fmt.Fprintf(p.w, "pollwarden: %s "+format+"\n", append([]any{now.UTC().Format(time.RFC3339)}, args...)...)
	p.lastAt = now
}

func stateText(op *pollwarden.Operation) string {
	if op.LastState == "" {
		return "not yet observed"
	}
	return display.Value(op.LastState)
}

// budgetText is the budgets spent so far: requests always, transport
// failures once one has been spent (a run of 503s spends them fast).
func budgetText(op *pollwarden.Operation) string {
	s := fmt.Sprintf("requests %d/%d", op.StatusRequestsUsed, op.MaxStatusRequests)
	if op.TransportFailuresUsed > 0 {
		s += fmt.Sprintf(", transport failures %d/%d", op.TransportFailuresUsed, op.MaxTransportFailures)
	}
	return s
}

// nextText is when the next status request is due and who chose it.
func nextText(op *pollwarden.Operation, next, now time.Time) string {
	s := fmt.Sprintf("next check at %s (in %s", next.UTC().Format(time.RFC3339), max(next.Sub(now), 0).Round(time.Second))
	if by := nextSetBy(op.NextPollSource); by != "" {
		s += ", " + by
	}
	return s + ")"
}
