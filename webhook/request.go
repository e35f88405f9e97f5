package webhook

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/internal/present"
)

// request is the decision request a person is sent (Slack, e-mail): what
// happened, what it cost, the options with their cost and new limit, and
// how to answer each. Every value that came from a provider or an agent
// is escaped (package display), so it stays one value on one line.
type request struct {
	Title    string
	Headline string
	Facts    []fact
	Options  []requestOption
	// Console is the operation's page in the web console; empty when the
	// webhooks file names no console_url.
	Console string
}

type fact struct{ Name, Value string }

type requestOption struct {
	ID, Label, Cost, NewLimit, Answer string
}

// newRequest builds the request an event e calls for, from the record as
// read at enqueue time and the event itself.
func newRequest(e event, ev pollwarden.Event, data pollwarden.EventData, op *pollwarden.Operation, console string) request {
	id := display.Value(op.ID)
	r := request{}
	if console != "" {
		r.Console = console + "/ui/operations/" + url.PathEscape(op.ID)
	}
	reason := string(data.Reason)
	if reason == "" {
		reason = string(op.Reason)
	}
	opts := data.Options
	if opts == nil && op.Escalation != nil {
		opts = op.Escalation.Options
	}
	switch e.class {
	case ClassEscalated:
		r.Title = fmt.Sprintf("Decision needed: %s (%s)", id, reason)
		r.Headline = "An external job needs a decision: pollwarden stopped waiting and asks for one of the options below."
	case ClassReminder:
		r.Title = fmt.Sprintf("Reminder: decision still needed: %s (%s)", id, reason)
		r.Headline = "This decision request is still waiting for an answer."
		if data.Decision != "" {
			r.Headline = capital(display.Text(data.Decision)) + "."
		}
	case ClassExpiry:
		r.Title = fmt.Sprintf("Decision request expired: %s (%s)", id, reason)
		r.Headline = "The decision request expired; the contract's default was applied (the story says which)."
		if data.Decision != "" {
			r.Headline = capital(display.Text(data.Decision)) + "."
		}
		r.Headline += " Nobody decided in time; this was not a person's answer."
		opts = nil
	}
	if op.Phase != pollwarden.PhaseEscalated && e.class != ClassExpiry {
		r.Headline += fmt.Sprintf(" Since then the operation is %s.", op.Phase)
		opts = nil
	}
	elapsed := data.Elapsed
	if elapsed == "" {
		elapsed = ev.At.Sub(op.StartedAt).Round(time.Second).String()
	}
	r.Facts = []fact{
		{"Operation", id},
		{"Contract", display.Value(op.Contract)},
		{"Provider job", display.Value(op.ProviderJobID)},
		{"Last state", present.LastState(op)},
		{"Elapsed", elapsed},
		{"Status requests", fmt.Sprintf("%d of %d", op.StatusRequestsUsed, op.MaxStatusRequests)},
		{"Last HTTP result", present.LastHTTP(op)},
		{"Reason", reason},
		{"Phase", string(op.Phase)},
	}
	for _, o := range opts {
		ro := requestOption{ID: o.ID, Label: display.Text(o.Label), Cost: present.OptionCost(o), NewLimit: present.OptionNewLimit(o)}
		ro.Answer = fmt.Sprintf("pollwarden decide %s %s", id, o.ID)
		if r.Console != "" {
			ro.Answer += " (or in the console: " + r.Console + ")"
		}
		r.Options = append(r.Options, ro)
	}
	return r
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// payloadData reads an event's facts from its stored payload, which the
// dispatcher's raw scan leaves undecoded; ok is false when the payload is
// sealed (encrypted) and does not decode as JSON.
func payloadData(ev pollwarden.Event) (pollwarden.EventData, bool) {
	var d pollwarden.EventData
	if json.Unmarshal(ev.Payload, &d) != nil {
		return pollwarden.EventData{}, false
	}
	return d, true
}
