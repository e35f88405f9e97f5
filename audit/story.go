package audit

import (
	"fmt"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// Story renders an operation's events as one line each, readable by a
// person after an incident (R26), e.g.
//
//	10:20:31 received 503, Retry-After 120, next poll 10:22:31 from provider guidance
//
// Times are shown in loc (UTC when nil). Text that came from a provider,
// an agent or a person is escaped (package display), and free text is
// quoted, so a value can never start a line of its own or pass for one.
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
		job := "job " + display.Value(d.ProviderJobID)
		if d.ProviderJobID == "" {
			job = "a job by its status URL"
		}
		s := fmt.Sprintf("submitted %s, deadline %s, budget %d (%s)", job, clock(d.DeadlineAt), d.MaxRequests, display.Text(d.Detail))
		if d.Actor != nil {
			s += " by " + actorName(d.Actor)
		}
		return s
	case pollwarden.EventResumed:
		return "resumed by " + display.Text(d.Detail)
	case pollwarden.EventRequestSent:
		return fmt.Sprintf("status request %d of %d sent, deadline %s", d.RequestsUsed, d.MaxRequests, clock(d.DeadlineAt))
	case pollwarden.EventResponseReceived:
		return responseLine(d, clock)
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
		s := fmt.Sprintf("next poll %s from %s", clock(d.NextPollAt), sourceText(d.DelaySource))
		if d.Detail != "" {
			s += " (" + display.Text(d.Detail) + ")"
		}
		return s
	case pollwarden.EventExtensionRequested:
		return fmt.Sprintf("%s asked for more: %s (grants nothing)", actorName(d.Actor), extensionText(d.Detail))
	case pollwarden.EventDecision:
		s := fmt.Sprintf("%s decided %s: %s", actorName(d.Actor), display.Value(d.Option), display.Text(d.Decision))
		if d.Detail != "" {
			s += ", note " + display.Quote(d.Detail)
		}
		return s
	case pollwarden.EventResultFetchStarted:
		return fmt.Sprintf("result fetch started by %s from %s", actorName(d.Actor), display.Value(d.URL))
	case pollwarden.EventResultFetched:
		return fmt.Sprintf("result fetched: %d bytes, sha256 %s, by %s", d.Bytes, display.Value(d.SHA256), actorName(d.Actor))
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

func responseLine(d pollwarden.EventData, clock func(*time.Time) string) string {
	var b strings.Builder
	switch {
	case d.Transport != "":
		fmt.Fprintf(&b, "no answer (%s", display.Text(d.Transport))
		if d.Detail != "" {
			b.WriteString(": " + display.Text(d.Detail))
		}
		b.WriteString(")")
	case d.HTTPStatus >= 200 && d.HTTPStatus < 300 && d.State != "":
		b.WriteString("polled, state " + display.Value(d.State))
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
		fmt.Fprintf(&b, ", next poll %s from %s", clock(d.NextPollAt), sourceText(d.DelaySource))
	case d.Decision != "":
		b.WriteString(", " + display.Text(d.Decision))
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
	return display.Text(string(s))
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
