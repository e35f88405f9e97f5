package audit

import (
	"fmt"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
)

// Story renders an operation's events as one line each, readable by a
// person after an incident (R26), e.g.
//
//	10:20:31 received 503, Retry-After 120, next poll 10:22:31 from provider guidance
//
// Times are shown in loc (UTC when nil).
func Story(events []pollwarden.Event, loc *time.Location) []string {
	if loc == nil {
		loc = time.UTC
	}
	lines := make([]string, 0, len(events))
	for _, e := range events {
		lines = append(lines, StoryLine(e, loc))
	}
	return lines
}

// StoryLine is one line of the story: the event's time in loc (UTC when
// nil), a space, and Line.
func StoryLine(e pollwarden.Event, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return e.At.In(loc).Format(time.TimeOnly) + " " + Line(e, loc)
}

// Line is the text of one event without its time.
func Line(e pollwarden.Event, loc *time.Location) string {
	d := e.Data
	clock := func(t *time.Time) string {
		if t == nil {
			return "?"
		}
		return t.In(loc).Format(time.TimeOnly)
	}
	switch e.Kind {
	case pollwarden.EventSubmitted:
		job := "job " + d.ProviderJobID
		if d.ProviderJobID == "" {
			job = "a job by its status URL"
		}
		return fmt.Sprintf("submitted %s, deadline %s, budget %d (%s)", job, clock(d.DeadlineAt), d.MaxRequests, d.Detail)
	case pollwarden.EventResumed:
		return "resumed by " + d.Detail
	case pollwarden.EventRequestSent:
		return fmt.Sprintf("status request %d of %d sent, deadline %s", d.RequestsUsed, d.MaxRequests, clock(d.DeadlineAt))
	case pollwarden.EventResponseReceived:
		return responseLine(d, clock)
	case pollwarden.EventHintRejected:
		return "rejected provider guidance: " + d.Hint
	case pollwarden.EventStateChanged:
		said := ""
		if d.ProviderState != "" {
			said = " (provider said " + d.ProviderState + ")"
		}
		switch {
		case d.PrevState == "":
			return "state is now " + d.State + said
		case d.PrevState == d.State:
			return "state is still " + d.State + said
		}
		return fmt.Sprintf("state changed %s → %s%s", d.PrevState, d.State, said)
	case pollwarden.EventSucceeded:
		return fmt.Sprintf("succeeded after %d of %d status requests, %s elapsed", d.RequestsUsed, d.MaxRequests, d.Elapsed)
	case pollwarden.EventFinished:
		return fmt.Sprintf("%s (state %s) after %d of %d status requests", d.Decision, d.State, d.RequestsUsed, d.MaxRequests)
	case pollwarden.EventEscalated:
		return fmt.Sprintf("escalated %s: %s; %d of %d status requests used; options: %s",
			d.Reason, d.Detail, d.RequestsUsed, d.MaxRequests, optionIDs(d.Options))
	case pollwarden.EventNextCheckScheduled:
		s := fmt.Sprintf("next poll %s from %s", clock(d.NextPollAt), sourceText(d.DelaySource))
		if d.Detail != "" {
			s += " (" + d.Detail + ")"
		}
		return s
	case pollwarden.EventExtensionRequested:
		return fmt.Sprintf("%s asked for more: %s (grants nothing)", actorName(d.Actor), d.Detail)
	case pollwarden.EventDecision:
		s := fmt.Sprintf("%s decided %s: %s", actorName(d.Actor), d.Option, d.Decision)
		if d.Detail != "" {
			s += " (" + d.Detail + ")"
		}
		return s
	case pollwarden.EventAction:
		return fmt.Sprintf("action %s: %s; %s", d.Option, d.Decision, d.Detail)
	}
	return string(e.Kind)
}

func responseLine(d pollwarden.EventData, clock func(*time.Time) string) string {
	var b strings.Builder
	switch {
	case d.Transport != "":
		fmt.Fprintf(&b, "no answer (%s", d.Transport)
		if d.Detail != "" {
			b.WriteString(": " + d.Detail)
		}
		b.WriteString(")")
	case d.HTTPStatus >= 200 && d.HTTPStatus < 300 && d.State != "":
		b.WriteString("polled, state " + d.State)
		if d.ProviderState != "" {
			b.WriteString(" (provider said " + d.ProviderState + ")")
		}
	default:
		fmt.Fprintf(&b, "received %d", d.HTTPStatus)
	}
	if d.RetryAfter != "" {
		b.WriteString(", Retry-After " + d.RetryAfter)
	}
	if d.FailuresUsed > 0 {
		fmt.Fprintf(&b, ", transport failure %d", d.FailuresUsed)
	}
	if d.RateLimited > 0 {
		fmt.Fprintf(&b, ", rate-limited answer %d", d.RateLimited)
	}
	if d.RequestID != "" {
		b.WriteString(", provider request " + d.RequestID)
	}
	switch {
	case d.Decision == "wait" || strings.HasPrefix(d.Decision, "404"):
		if d.Decision != "wait" {
			b.WriteString(", " + d.Decision)
		}
		fmt.Fprintf(&b, ", next poll %s from %s", clock(d.NextPollAt), sourceText(d.DelaySource))
	case d.Decision != "":
		b.WriteString(", " + d.Decision)
	}
	return b.String()
}

// sourceText names a delay source in words, as the story reads.
func sourceText(s pollwarden.DelaySource) string {
	switch s {
	case pollwarden.DelayRetryAfter:
		return "provider guidance"
	case pollwarden.DelayPollHint:
		return "provider hint"
	case pollwarden.DelayLocalBackoff:
		return "local backoff"
	case pollwarden.DelayManualExtension:
		return "manual extension"
	}
	return string(s)
}

func actorName(a *pollwarden.Actor) string {
	if a == nil {
		return "someone"
	}
	return fmt.Sprintf("%s (%s)", a.Name, a.Role)
}

func optionIDs(opts []pollwarden.Option) string {
	ids := make([]string, len(opts))
	for i, o := range opts {
		ids[i] = o.ID
	}
	return strings.Join(ids, ", ")
}
