package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// ClassIncident is a provider incident's opening and closing: one
// message per incident and endpoint for each (Slack and e-mail get the
// opening only: one notification per incident).
const ClassIncident = "incident"

// incidentEvent classifies an incident's audit event; the message's key
// is the incident's, so several replicas, or a second event naming the
// same incident, enqueue it once per endpoint.
func incidentEvent(ev pollwarden.Event, data pollwarden.EventData) (event, bool) {
	if data.Incident == "" {
		return event{}, false
	}
	switch ev.Kind {
	case pollwarden.EventIncidentOpened:
		return event{ClassIncident, "incident.opened", "incident-opened/" + data.Incident}, true
	case pollwarden.EventIncidentClosed:
		return event{ClassIncident, "incident.closed", "incident-closed/" + data.Incident}, true
	}
	return event{}, false
}

// incidentOf reads the incident an event names, as a webhook shows it:
// the refused credential's fingerprint is left out (the key names the
// reference; the fingerprint is the store's business). ok is false when
// the store no longer has it.
func (d *Dispatcher) incidentOf(ctx context.Context, id string) (*pollwarden.Incident, bool, error) {
	inc, err := d.store.IncidentGet(ctx, id)
	if errors.Is(err, pollwarden.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	inc.Refused = nil
	return inc, true, nil
}

// incidentRequest is the notification of an incident's opening: what
// failed, since when, and what an approver may decide for every
// operation it holds.
func incidentRequest(inc *pollwarden.Incident, console string) request {
	r := request{
		Title: fmt.Sprintf("Provider incident under %s: %s (%s)", display.Value(inc.Key), display.Text(inc.What), inc.Kind),
		Facts: []fact{
			{"Incident", display.Value(inc.ID)},
			{"Quota key", display.Value(inc.Key)},
			{"Kind", string(inc.Kind)},
			{"What failed", display.Text(inc.What)},
			{"Since", inc.Since.UTC().Format("2006-01-02 15:04:05 UTC")},
			{"Operations", fmt.Sprintf("%d failed together", len(inc.Operations))},
		},
	}
	if console != "" {
		r.Console = console + "/ui/incidents/" + url.PathEscape(inc.ID)
	}
	answer := func(opt string) string {
		a := fmt.Sprintf("POST /v1/incidents/%s/decisions {\"option\":%q}", url.PathEscape(inc.ID), opt)
		if r.Console != "" {
			a += " (or in the console: " + r.Console + ")"
		}
		return a
	}
	abandon := requestOption{ID: pollwarden.OptionAbandon, Label: "Abandon every operation the incident holds",
		Cost: "nothing more is sent", NewLimit: "unchanged", Answer: answer(pollwarden.OptionAbandon)}
	switch inc.Kind {
	case pollwarden.IncidentCredential:
		r.Headline = "The provider refused the credential: every operation under it holds and sends nothing more until an approver decides."
		r.Options = []requestOption{{ID: pollwarden.OptionRetryCredential,
			Label: "Retry with the changed credential (once it differs from the refused one)",
			Cost:  "one status request per operation", NewLimit: "unchanged", Answer: answer(pollwarden.OptionRetryCredential)}, abandon}
	default:
		r.Headline = "Several operations under one quota key failed together: one probe at a time asks the provider until it answers again; the others hold and spend no budget."
		r.Options = []requestOption{abandon}
	}
	return r
}

// incidentMessages builds the messages of an incident event ev.
func (d *Dispatcher) incidentMessages(ctx context.Context, e event, ev pollwarden.Event, data pollwarden.EventData, now time.Time) ([]pollwarden.OutboxMessage, error) {
	inc, ok, err := d.incidentOf(ctx, data.Incident)
	if err != nil || !ok {
		return nil, err
	}
	body, err := jsonBody(IncidentBody{Type: e.typ, Timestamp: ev.At.UTC(), Data: IncidentData{Incident: inc, EventPos: ev.Pos}})
	if err != nil {
		return nil, err
	}
	var out []pollwarden.OutboxMessage
	for _, ep := range d.cfg.Endpoints {
		if !ep.Wants(e.class) {
			continue
		}
		b := body
		switch ep.Format {
		case FormatSlack, FormatEmail:
			if ev.Kind != pollwarden.EventIncidentOpened {
				continue
			}
			r := incidentRequest(inc, d.cfg.ConsoleURL)
			if ep.Format == FormatEmail {
				b, err = emailBody(r, ep.SMTP, messageID(ev), ev.At)
			} else {
				b, err = slackBody(r)
			}
			if err != nil {
				return nil, err
			}
		}
		out = append(out, pollwarden.OutboxMessage{ID: messageID(ev), Key: e.key, Endpoint: ep.Name, EventPos: ev.Pos,
			OperationID: ev.OperationID, Type: e.typ, Body: b, CreatedAt: now})
	}
	return out, nil
}

// IncidentBody is what incident.opened and incident.closed POST: the
// incident's record as the store keeps it (docs/webhooks.md).
type IncidentBody struct {
	Type      string       `json:"type"`
	Timestamp time.Time    `json:"timestamp"`
	Data      IncidentData `json:"data"`
}

// IncidentData is the incident and the audit position of its event.
type IncidentData struct {
	*pollwarden.Incident
	EventPos int64 `json:"event_pos"`
}
