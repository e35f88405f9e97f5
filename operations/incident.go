package operations

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/prober"
)

// maxIncidentID bounds an incident id as typed ("inc-" and 16 hex digits).
const maxIncidentID = 64

// Incidents lists the provider incidents, open ones first, each with the
// operations it holds counted now. limit is as typed ("" for 100).
func (s *Reader) Incidents(ctx context.Context, c Caller, openOnly bool, limit string) ([]*pollwarden.Incident, error) {
	if err := c.May(ActionIncidents, nil, ""); err != nil {
		return nil, err
	}
	n := defaultListLimit
	if limit != "" {
		v, err := strconv.Atoi(limit)
		if err != nil || v < 1 || v > maxListLimit {
			return nil, refuse(Invalid, "limit", "limit %s must be a whole number from 1 to %d", display.Clip(limit), maxListLimit)
		}
		n = v
	}
	list, err := s.store.IncidentList(ctx, pollwarden.IncidentListParams{OpenOnly: openOnly, Limit: n})
	if err != nil {
		return nil, err
	}
	if err := s.countHeld(ctx, list); err != nil {
		return nil, err
	}
	return list, nil
}

// Incident reads one incident, with the operations it holds counted now.
func (s *Reader) Incident(ctx context.Context, c Caller, id string) (*pollwarden.Incident, error) {
	if err := c.May(ActionIncidents, nil, ""); err != nil {
		return nil, err
	}
	inc, err := s.incident(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.countHeld(ctx, []*pollwarden.Incident{inc}); err != nil {
		return nil, err
	}
	return inc, nil
}

func (s *Reader) incident(ctx context.Context, id string) (*pollwarden.Incident, error) {
	switch {
	case id == "":
		return nil, refuse(Invalid, "incident_id", "incident_id is required")
	case len(id) > maxIncidentID:
		return nil, refuse(Invalid, "incident_id", "incident_id is longer than %d bytes; it is an id such as inc-0123456789abcdef", maxIncidentID)
	}
	inc, err := s.store.IncidentGet(ctx, id)
	if errors.Is(err, pollwarden.ErrNotFound) {
		return nil, refuse(NotFound, "incident_id", "no incident %s", display.Clip(id))
	}
	return inc, err
}

// held returns the operations incident id holds now: those waiting with
// the delay source provider_incident under it, found through the store's
// index (ListParams.HeldBy), not by reading every waiting operation.
func (s *Reader) held(ctx context.Context, id string) ([]*pollwarden.Operation, error) {
	ops, err := s.store.OperationList(ctx, pollwarden.ListParams{Phase: pollwarden.PhaseWaiting, HeldBy: id})
	if err != nil {
		return nil, err
	}
	out := ops[:0]
	for _, op := range ops {
		if op.HeldBy == id && op.NextPollSource == pollwarden.DelayProviderIncident {
			out = append(out, op)
		}
	}
	return out, nil
}

// countHeld fills in each open incident's Held, each count bounded
// (pollwarden.MaxHeldCount).
func (s *Reader) countHeld(ctx context.Context, list []*pollwarden.Incident) error {
	var ids []string
	for _, inc := range list {
		if inc.Open() {
			ids = append(ids, inc.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	held, err := s.store.IncidentHeld(ctx, ids, pollwarden.MaxHeldCount)
	if err != nil {
		return err
	}
	for _, inc := range list {
		inc.Held = held[inc.ID]
	}
	return nil
}

// IncidentDecisionParams is an approver's answer to an incident, as typed.
type IncidentDecisionParams struct {
	Caller Caller
	ID     string
	Option string
	Note   string
}

// IncidentDecision is what a decision on an incident did: the incident,
// closed, and each operation it applied to, with the refusals (an
// operation another answer changed meanwhile).
type IncidentDecision struct {
	Incident *pollwarden.Incident `json:"incident"`
	Applied  []string             `json:"applied"`
	Refused  map[string]string    `json:"refused,omitempty"`
}

// DecideIncident applies an approver's answer to every operation an
// incident holds, and closes it. abandon abandons each (the held ones,
// and those the incident stopped); retry_credential, offered only for a
// refused credential that reads differently now (R19: never a retry with
// the same one), closes the incident, so the held operations resume spread
// over their backoff, and gives each operation the refusal escalated its
// one request with the changed credential.
func (s *Service) DecideIncident(ctx context.Context, p IncidentDecisionParams) (*IncidentDecision, error) {
	if err := p.Caller.May(ActionDecideIncident, nil, ""); err != nil {
		return nil, err
	}
	switch {
	case p.Option != pollwarden.OptionAbandon && p.Option != pollwarden.OptionRetryCredential:
		return nil, refuse(Unknown, "option", "option %s is not an incident's: want %s or %s",
			display.Clip(p.Option), pollwarden.OptionRetryCredential, pollwarden.OptionAbandon)
	case utf8.RuneCountInString(p.Note) > MaxNote:
		return nil, refuse(Invalid, "note", "note is longer than %d characters", MaxNote)
	}
	inc, err := s.incident(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	if !inc.Open() {
		return nil, refuse(Conflict, "", "incident %s is closed (%s): there is no decision to make", inc.ID, display.Text(inc.ClosedBy))
	}
	if p.Option == pollwarden.OptionRetryCredential {
		switch {
		case inc.Kind != pollwarden.IncidentCredential:
			return nil, refuse(Conflict, "option", "incident %s is an outage, not a refused credential: retry_credential is not offered", inc.ID)
		case !prober.CredentialChanged(inc.Refused, s.getenv, s.readFile):
			return nil, refuse(Conflict, "option", "credential %s is the one the provider refused (or cannot be read here); change it first: a refused credential is never retried", display.Value(inc.Key))
		}
	}
	targets, err := s.held(ctx, inc.ID)
	if err != nil {
		return nil, err
	}
	// The operations whose refusal opened a credential incident are
	// escalated, not held: the decision answers them too.
	for _, id := range inc.Operations {
		if op, err := s.store.OperationGet(ctx, id); err == nil && op.Phase.AwaitsDecision() {
			targets = append(targets, op)
		}
	}
	out := &IncidentDecision{Applied: []string{}}
	apply := func() {
		for _, op := range targets {
			_, err := s.apply(ctx, DecisionParams{Caller: p.Caller, ID: op.ID, Option: p.Option, Note: p.Note})
			if err != nil {
				if out.Refused == nil {
					out.Refused = map[string]string{}
				}
				out.Refused[op.ID] = err.Error()
				continue
			}
			out.Applied = append(out.Applied, op.ID)
		}
	}
	// An abandon stops the operations before the incident closes, so none
	// sends on its way out; a retry closes it first, so the one request
	// each is allowed is not held.
	if p.Option == pollwarden.OptionAbandon {
		apply()
	}
	closed, err := s.closeIncident(ctx, p, inc, len(targets))
	if err != nil {
		return nil, err
	}
	if p.Option == pollwarden.OptionRetryCredential {
		apply()
	}
	out.Incident = closed
	return out, nil
}

// closeIncident writes the decision that closes inc, with its
// incident_closed event on the first operation that opened it.
func (s *Service) closeIncident(ctx context.Context, p IncidentDecisionParams, inc *pollwarden.Incident, n int) (*pollwarden.Incident, error) {
	now := s.o.Clock.Now()
	what := fmt.Sprintf("%s by %s, for %d operation(s)", p.Option, p.Caller.Name, n)
	params := pollwarden.IncidentDecideParams{ID: inc.ID, Now: now, ClosedBy: "decision: " + what,
		Decision: pollwarden.DecisionRecord{Option: p.Option, By: p.Caller.Actor, At: now, Outcome: what}}
	for _, id := range inc.Operations {
		if _, err := s.store.OperationGet(ctx, id); err == nil {
			actor := p.Caller.Actor
			params.OperationID = id
			params.Events = []pollwarden.Event{{OperationID: id, At: now, Kind: pollwarden.EventIncidentClosed,
				Data: pollwarden.EventData{Incident: inc.ID, Option: p.Option, Actor: &actor, Detail: p.Note,
					Decision: "incident " + inc.ID + " closed: " + what}}}
			break
		}
	}
	closed, err := s.store.IncidentDecide(ctx, params)
	switch {
	case errors.Is(err, pollwarden.ErrConflict):
		return nil, refuse(Conflict, "", "incident %s was closed meanwhile: read it again", inc.ID)
	case errors.Is(err, pollwarden.ErrNotFound):
		return nil, refuse(NotFound, "incident_id", "no incident %s", display.Clip(inc.ID))
	}
	return closed, err
}

// MaxIncidentGauges bounds the open incidents the metrics show, one
// series per key: keys come from contracts, but a gauge's cardinality
// must not depend on them.
const MaxIncidentGauges = 50

// IncidentGauge is one open incident as the metrics show it: its key and
// kind, and how many operations it holds (bounded, pollwarden.MaxHeldCount).
type IncidentGauge struct {
	Key  string
	Kind pollwarden.IncidentKind
	Held int
}

// IncidentGauges reads the open incidents (at most MaxIncidentGauges)
// with their held counts, for no caller: the metrics gauges, which name
// no operation. Like PhaseCounts, the store is the only place that knows
// every process's incidents.
func (s *Reader) IncidentGauges(ctx context.Context) ([]IncidentGauge, error) {
	list, err := s.store.IncidentList(ctx, pollwarden.IncidentListParams{OpenOnly: true, Limit: MaxIncidentGauges})
	if err != nil {
		return nil, err
	}
	if err := s.countHeld(ctx, list); err != nil {
		return nil, err
	}
	out := make([]IncidentGauge, 0, len(list))
	for _, inc := range list {
		out = append(out, IncidentGauge{Key: inc.Key, Kind: inc.Kind, Held: inc.Held})
	}
	return out, nil
}
