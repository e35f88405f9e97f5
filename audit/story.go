package audit

import (
	"fmt"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/internal/present"
)

// Story renders an operation's events as a story a person can read after
// an incident (R26), e.g.
//
//	2030-01-02 10:20:02 UTC started watching job j1, deadline 10:21:02, budget 8 (…)
//	10:20:02 status request 1 of 8: received 503, Retry-After 2, next poll 10:20:04 from provider guidance
//	10:20:04 status request 2 of 8: state running, next poll 10:20:06 from local backoff
//
// The date and the zone are on the first line, and the date again
// whenever it changes, so that a wait across midnight reads in order; a
// time inside a line carries its date when that is not the line's day.
// One status request is one line: the request, its answer and the change
// of state it brought are told together. The deadline is told when it is
// set and when it changes, not on every request. Times are shown in loc
// (UTC when nil). Text that came from a provider, an agent or a person is
// escaped (package display), and free text is quoted, so a value can
// never start a line of its own or pass for one.
func Story(events []pollwarden.Event, loc *time.Location) []string {
	told := NewTeller(loc).Tell(events)
	lines := make([]string, len(told))
	for i, t := range told {
		lines[i] = t.Text
	}
	return lines
}

// Teller tells a story in pieces (as `audit show` does between events it
// cannot read) and remembers what it has said: the day, the zone and the
// deadline, so that each is told once and again only when it changes.
type Teller struct {
	loc      *time.Location
	day      string
	deadline time.Time
}

// NewTeller starts a story told in loc (UTC when nil).
func NewTeller(loc *time.Location) *Teller {
	if loc == nil {
		loc = time.UTC
	}
	return &Teller{loc: loc}
}

// Told is one line of a story and the events it tells, events[First]
// through events[Last] of the slice given to Tell.
type Told struct {
	Text        string
	First, Last int
}

// Stamp is a line's time: with the date and the zone on the story's first
// line, with the date alone when the day changed, else the time of day.
func (t *Teller) Stamp(at time.Time) string {
	at = at.In(t.loc)
	day := at.Format(time.DateOnly)
	switch {
	case t.day == "":
		t.day = day
		return at.Format(time.DateTime + " MST")
	case day != t.day:
		t.day = day
		return at.Format(time.DateTime)
	}
	return at.Format(time.TimeOnly)
}

// clock shows a time inside a line stamped on t's current day: the time
// of day, with the date when it falls on another day.
func (t *Teller) clock(at *time.Time) string {
	if at == nil {
		return "?"
	}
	x := at.In(t.loc)
	if x.Format(time.DateOnly) != t.day {
		return x.Format(time.DateTime)
	}
	return x.Format(time.TimeOnly)
}

// Tell renders events as story lines, continuing the story told so far.
func (t *Teller) Tell(events []pollwarden.Event) []Told {
	var out []Told
	for i := 0; i < len(events); {
		e := events[i]
		stamp := t.Stamp(e.At)
		text, last := t.prunedRun(events, i)
		if last < i {
			text, last = t.poll(events, i)
		}
		if last < i {
			text, last = t.line(e), i
		}
		out = append(out, Told{Text: stamp + " " + text, First: i, Last: last})
		i = last + 1
	}
	return out
}

// poll tells a status request with its answer, and the change of state
// the answer brought, as one line; last < i when events[i] does not start
// such a run.
func (t *Teller) poll(events []pollwarden.Event, i int) (text string, last int) {
	req := events[i]
	if req.Kind != pollwarden.EventRequestSent || i+1 >= len(events) || events[i+1].Kind != pollwarden.EventResponseReceived {
		return "", -1
	}
	resp := events[i+1].Data
	last = i + 1
	prev := ""
	if last+1 < len(events) {
		if sc := events[last+1]; sc.Kind == pollwarden.EventStateChanged && sc.Data.State == resp.State && resp.State != "" {
			prev, last = sc.Data.PrevState, last+1
		}
	}
	if last+1 < len(events) {
		switch events[last+1].Kind {
		case pollwarden.EventSucceeded, pollwarden.EventFinished, pollwarden.EventEscalated:
			// The outcome's own line says what the answer decided.
			if resp.Decision != "wait" && !strings.HasPrefix(resp.Decision, "404") {
				resp.Decision = ""
			}
		}
	}
	s := fmt.Sprintf("status request %d of %d%s: %s", req.Data.RequestsUsed, req.Data.MaxRequests,
		t.deadlineChange(req.Data.DeadlineAt), responseLine(resp, prev, t.clock))
	return s, last
}

// deadlineChange is ", deadline T" when at differs from the deadline the
// story last told, else "".
func (t *Teller) deadlineChange(at *time.Time) string {
	if at == nil || at.Equal(t.deadline) {
		return ""
	}
	t.deadline = *at
	return ", deadline " + t.clock(at)
}

// StoryLine is one event told on its own: its time with date and zone,
// a space, and Line.
func StoryLine(e pollwarden.Event, loc *time.Location) string {
	t := NewTeller(loc)
	return t.Stamp(e.At) + " " + t.line(e)
}

// Line is the text of one event without its time.
func Line(e pollwarden.Event, loc *time.Location) string {
	t := NewTeller(loc)
	t.Stamp(e.At)
	return t.line(e)
}

func (t *Teller) line(e pollwarden.Event) string {
	d := e.Data
	switch e.Kind {
	case pollwarden.EventSubmitted:
		if d.DeadlineAt != nil {
			t.deadline = *d.DeadlineAt
		}
		// A watched job was submitted by someone else: the operation
		// only starts watching it; "submitted" is kept for the job
		// pollwarden itself submits.
		job := "started watching job " + display.Value(d.ProviderJobID)
		if d.ProviderJobID == "" {
			job = "started watching a job by its status URL"
			if strings.HasPrefix(d.Detail, "pollwarden submits it") {
				job = "submitted a job for pollwarden to submit"
			}
		}
		s := fmt.Sprintf("%s, deadline %s, budget %d (%s)", job, t.clock(d.DeadlineAt), d.MaxRequests, display.Text(d.Detail))
		if d.Actor != nil {
			s += " by " + actorName(d.Actor)
		}
		return s
	case pollwarden.EventSubmissionSent:
		return "submission sent: " + display.Text(d.Detail)
	case pollwarden.EventSubmissionAnswered:
		return "submission answered: " + display.Text(d.Detail)
	case pollwarden.EventResumed:
		return fmt.Sprintf("resumed by %s, %d of %d status requests already used", display.Text(d.Detail), d.RequestsUsed, d.MaxRequests)
	case pollwarden.EventContractChanged:
		s := fmt.Sprintf("contract changed: %s; %d of %d status requests used, deadline %s",
			display.Text(d.Detail), d.RequestsUsed, d.MaxRequests, t.clock(d.DeadlineAt))
		if d.DeadlineAt != nil {
			t.deadline = *d.DeadlineAt
		}
		return s
	case pollwarden.EventInterrupted:
		return fmt.Sprintf("interrupted: %s stopped waiting; nothing polls it until it is resumed", display.Text(d.Detail))
	case pollwarden.EventRequestSent:
		return fmt.Sprintf("status request %d of %d sent%s", d.RequestsUsed, d.MaxRequests, t.deadlineChange(d.DeadlineAt))
	case pollwarden.EventResponseReceived:
		return "polled, " + responseLine(d, "", t.clock)
	case pollwarden.EventHintRejected:
		return "rejected provider guidance: " + display.Text(d.Hint)
	case pollwarden.EventStateChanged:
		said := ""
		if d.ProviderState != "" {
			said = " (provider said " + display.Value(d.ProviderState) + ")"
		}
		switch {
		case d.PrevState == "":
			return "state is now " + display.Value(d.State) + said
		case d.PrevState == d.State:
			return "state is still " + display.Value(d.State) + said
		}
		return fmt.Sprintf("state changed %s → %s%s", display.Value(d.PrevState), display.Value(d.State), said)
	case pollwarden.EventSucceeded:
		return fmt.Sprintf("succeeded after %d of %d status requests, %s elapsed", d.RequestsUsed, d.MaxRequests, d.Elapsed)
	case pollwarden.EventFinished:
		return fmt.Sprintf("%s (state %s) after %d of %d status requests", display.Text(d.Decision), display.Value(d.State), d.RequestsUsed, d.MaxRequests)
	case pollwarden.EventEscalated:
		return fmt.Sprintf("escalated %s: %s; %d of %d status requests used; options: %s",
			display.Value(string(d.Reason)), display.Text(d.Detail), d.RequestsUsed, d.MaxRequests, optionIDs(d.Options))
	case pollwarden.EventNextCheckScheduled:
		s := fmt.Sprintf("next poll %s from %s", t.clock(d.NextPollAt), present.DelaySource(d.DelaySource))
		if d.Detail != "" {
			s += " (" + display.Text(d.Detail) + ")"
		}
		return s
	case pollwarden.EventExtensionRequested:
		return fmt.Sprintf("%s asked for more: %s (grants nothing)", actorName(d.Actor), extensionText(d.Detail))
	case pollwarden.EventDecision:
		if d.DeadlineAt != nil {
			t.deadline = *d.DeadlineAt // the decision's text names it
		}
		s := fmt.Sprintf("%s decided %s: %s", actorName(d.Actor), display.Value(d.Option), display.Text(d.Decision))
		if d.Detail != "" {
			s += ", note " + display.Quote(d.Detail)
		}
		return s
	case pollwarden.EventDecisionReminder, pollwarden.EventDecisionExpired:
		return display.Text(d.Decision)
	case pollwarden.EventResultFetchStarted:
		s := fmt.Sprintf("result fetch started by %s from %s", actorName(d.Actor), display.Value(d.URL))
		if d.Detail != "" {
			s += " (" + display.Text(d.Detail) + ")"
		}
		return s
	case pollwarden.EventResultFetchRefused:
		return fmt.Sprintf("result fetch refused, nothing sent, asked by %s: %s", actorName(d.Actor), display.Text(d.Detail))
	case pollwarden.EventResultFetched:
		pages := ""
		switch {
		case d.Pages == 1:
			pages = " in 1 page"
		case d.Pages > 1:
			pages = fmt.Sprintf(" in %d pages", d.Pages)
		}
		return fmt.Sprintf("result fetched: %d bytes%s, sha256 %s, by %s", d.Bytes, pages, display.Value(d.SHA256), actorName(d.Actor))
	case pollwarden.EventResultFetchFailed:
		s := "result fetch failed: " + display.Text(d.Detail)
		if d.HTTPStatus != 0 {
			s += fmt.Sprintf(" (HTTP %d)", d.HTTPStatus)
		}
		return s + ", by " + actorName(d.Actor)
	case pollwarden.EventAction:
		return fmt.Sprintf("action %s: %s; %s", display.Value(d.Option), display.Text(d.Decision), display.Text(d.Detail))
	}
	return display.Text(string(e.Kind))
}

// extensionText shows an extension request with the agent's justification
// quoted. The event keeps "asks for T and N more status requests: WHY";
// only WHY is the agent's, and the prefix cannot hold the separator.
func extensionText(detail string) string {
	const sep = " more status requests: "
	if head, why, ok := strings.Cut(detail, sep); ok {
		return display.Text(strings.TrimPrefix(head, "asks for ")) + " more status requests, justification " + display.Quote(why)
	}
	return display.Quote(detail)
}

// responseLine tells an answer; prev, when the answer changed the state,
// is the state before it.
func responseLine(d pollwarden.EventData, prev string, clock func(*time.Time) string) string {
	var b strings.Builder
	switch {
	case d.Transport != "":
		fmt.Fprintf(&b, "no answer (%s", display.Text(d.Transport))
		if d.Detail != "" {
			b.WriteString(": " + display.Text(d.Detail))
		}
		b.WriteString(")")
	case d.State != "":
		// A state comes from the body, or from a status code the contract
		// maps (a 202 while running, a 404 ending a deletion wait).
		if d.HTTPStatus < 200 || d.HTTPStatus >= 300 {
			fmt.Fprintf(&b, "received %d, ", d.HTTPStatus)
		}
		if prev != "" {
			b.WriteString("state " + display.Value(prev) + " → " + display.Value(d.State))
		} else {
			b.WriteString("state " + display.Value(d.State))
		}
		if d.ProviderState != "" {
			b.WriteString(" (provider said " + display.Value(d.ProviderState) + ")")
		}
	default:
		fmt.Fprintf(&b, "received %d", d.HTTPStatus)
	}
	if d.RetryAfter != "" {
		b.WriteString(", Retry-After " + display.Text(d.RetryAfter))
	}
	if d.FailuresUsed > 0 {
		fmt.Fprintf(&b, ", transport failure %d", d.FailuresUsed)
	}
	if d.RateLimited > 0 {
		fmt.Fprintf(&b, ", rate-limited answer %d", d.RateLimited)
	}
	if d.RequestID != "" {
		b.WriteString(", provider request " + display.Value(d.RequestID))
	}
	switch {
	case d.Decision == "wait" || strings.HasPrefix(d.Decision, "404"):
		if d.Decision != "wait" {
			b.WriteString(", " + display.Text(d.Decision))
		}
		fmt.Fprintf(&b, ", next poll %s from %s", clock(d.NextPollAt), present.DelaySource(d.DelaySource))
	case d.Decision != "":
		b.WriteString(", " + display.Text(d.Decision))
	}
	return b.String()
}

func actorName(a *pollwarden.Actor) string {
	if a == nil {
		return "someone"
	}
	return fmt.Sprintf("%s (%s)", display.Text(a.Name), display.Text(string(a.Role)))
}

func optionIDs(opts []pollwarden.Option) string {
	ids := make([]string, len(opts))
	for i, o := range opts {
		ids[i] = display.Value(o.ID)
	}
	return strings.Join(ids, ", ")
}
