package pollwarden

import (
	"context"
	"time"
)

// IncidentKind says what an incident is about.
type IncidentKind string

// The incident kinds.
const (
	// IncidentOutage: several operations under one key failed together
	// (transport failures, 5xx); one probe at a time finds out when the
	// provider is back.
	IncidentOutage IncidentKind = "outage"
	// IncidentCredential: the provider refused the key's credential (401,
	// 403); nothing more is sent under it until an approver decides.
	IncidentCredential IncidentKind = "credential"
)

// Incident is one provider incident under one quota key, as the store
// keeps it: opened and closed in the transaction of the save that
// observed it, so the record, the key's state and the outbox event agree.
type Incident struct {
	// ID is "inc-" and 16 hex digits, drawn from the key, the opening
	// time and the operation that opened it (policy.IncidentID).
	ID       string       `json:"id"`
	Key      string       `json:"key"`
	Kind     IncidentKind `json:"kind"`
	OpenedAt time.Time    `json:"opened_at"`
	// ClosedAt is nil while the incident is open.
	ClosedAt *time.Time `json:"closed_at,omitempty"`
	// What says what failed ("HTTP 503", "timeout", "HTTP 401"), and
	// Since when the first failure of the incident was seen.
	What  string    `json:"what"`
	Since time.Time `json:"since"`
	// Operations are the operations whose failures opened it (at most
	// policy.MaxRecentFailures).
	Operations []string `json:"operations"`
	// Probes counts the probes sent; LastProbe says what the last one got
	// and LastProbeAt when.
	Probes      int        `json:"probes"`
	LastProbe   string     `json:"last_probe,omitempty"`
	LastProbeAt *time.Time `json:"last_probe_at,omitempty"`
	// Held is how many operations the incident holds now: counted when
	// the incident is read, never stored, and at most MaxHeldCount.
	Held int `json:"held"`
	// Refused fingerprints the refused credential (kind credential).
	Refused *RefusedCredential `json:"refused_credential,omitempty"`
	// ClosedBy says what closed it: a probe's answer, or a decision.
	ClosedBy string `json:"closed_by,omitempty"`
	// Decision is the approver's answer that closed it, if one did.
	Decision *DecisionRecord `json:"decision,omitempty"`
}

// MaxHeldCount bounds Incident.Held: a count stops there, so reading an
// incident held by a crowd costs no more than by a few thousand.
const MaxHeldCount = 10000

// Open reports whether the incident is still open.
func (i *Incident) Open() bool { return i.ClosedAt == nil }

// Clone returns a copy that shares nothing with i.
func (i *Incident) Clone() *Incident {
	c := *i
	c.Operations = append([]string(nil), i.Operations...)
	if i.ClosedAt != nil {
		t := *i.ClosedAt
		c.ClosedAt = &t
	}
	if i.LastProbeAt != nil {
		t := *i.LastProbeAt
		c.LastProbeAt = &t
	}
	if i.Refused != nil {
		r := *i.Refused
		c.Refused = &r
	}
	if i.Decision != nil {
		d := *i.Decision
		c.Decision = &d
	}
	return &c
}

// IncidentFailure is one recent failure under a key, kept to decide
// whether an outage opens.
type IncidentFailure struct {
	Op   string    `json:"op"`
	At   time.Time `json:"at"`
	What string    `json:"what"`
}

// IncidentState is the incident part of a quota key's row: the recent
// failures (bounded) and the open incident, if any. It is read and
// written with the key's row, in the claim's and the save's transactions.
type IncidentState struct {
	Recent []IncidentFailure `json:"recent,omitempty"`
	Open   *OpenIncident     `json:"open,omitempty"`
	// Effects is what the answer just noted did (policy.KeyNote), for the
	// store to write with the row in the same transaction: the incident
	// records and their audit events. Never stored, never cloned.
	Effects *IncidentEffects `json:"-"`
}

// OpenIncident is what the key's row keeps of its open incident: enough
// to grant or hold a request without reading the incident's record.
type OpenIncident struct {
	ID       string       `json:"id"`
	Kind     IncidentKind `json:"kind"`
	OpenedAt time.Time    `json:"opened_at"`
	// ProbeOp holds the probe slot until ProbeUntil: a lease, so a probe
	// whose process died frees the slot on its own.
	ProbeOp    string    `json:"probe_op,omitempty"`
	ProbeUntil time.Time `json:"probe_until,omitzero"`
	// NextProbeAt spaces the probes by backoff.
	NextProbeAt time.Time `json:"next_probe_at,omitzero"`
	Probes      int       `json:"probes,omitempty"`
}

// Clone returns a copy that shares nothing with s.
func (s IncidentState) Clone() IncidentState {
	c := IncidentState{Recent: append([]IncidentFailure(nil), s.Recent...)}
	if s.Open != nil {
		o := *s.Open
		c.Open = &o
	}
	return c
}

// IncidentListParams filters IncidentList.
type IncidentListParams struct {
	// OpenOnly keeps only the open incidents.
	OpenOnly bool
	// Limit caps the list (<= 0: the driver's default, never "all").
	Limit int
}

// IncidentDecideParams is the input of IncidentDecide: the open incident
// is closed by an approver's answer.
type IncidentDecideParams struct {
	ID       string
	Decision DecisionRecord
	// ClosedBy says, for people, what the decision did.
	ClosedBy string
	Now      time.Time
	// Events are appended to operation OperationID in the same
	// transaction (the incident_closed event the outbox announces); none
	// when OperationID is empty.
	OperationID string
	Events      []Event
}

// IncidentKeeper is the store's part for incidents: the records, read by
// people, and the approver's decision that closes one.
type IncidentKeeper interface {
	// IncidentList returns incidents, open ones first, then newest first.
	IncidentList(ctx context.Context, p IncidentListParams) ([]*Incident, error)
	// IncidentGet returns the incident or ErrNotFound.
	IncidentGet(ctx context.Context, id string) (*Incident, error)
	// IncidentDecide closes the open incident p.ID with p.Decision, and
	// clears it from its key's state, in one transaction. It fails with
	// ErrNotFound for an unknown id and ErrConflict when it is closed.
	IncidentDecide(ctx context.Context, p IncidentDecideParams) (*Incident, error)
	// IncidentHeld counts the operations each incident of ids holds now
	// (ListParams.HeldBy), each count at most limit: a listing's cost
	// stays bounded however many operations an outage holds.
	IncidentHeld(ctx context.Context, ids []string, limit int) (map[string]int, error)
}

// The audit events of an incident, appended to the operation whose
// answer opened or closed it (or that a decision on it applied to): the
// outbox turns them into incident.opened and incident.closed.
const (
	EventIncidentOpened EventKind = "incident_opened"
	EventIncidentClosed EventKind = "incident_closed"
)

// IncidentEffects is what an answer did to its key's incidents
// (policy.NoteIncident); the save that observed it writes them in its
// transaction, with the audit event the outbox turns into
// incident.opened or incident.closed.
type IncidentEffects struct {
	// Opened is a new incident's record; Closed the open one's, closed
	// (ClosedAt, ClosedBy and Probes set; the rest is kept as stored).
	Opened, Closed *Incident
	// Probed is set when the answer was the open incident's probe and it
	// failed.
	Probed *IncidentProbe
}

// Any reports whether there is anything to write.
func (fx IncidentEffects) Any() bool { return fx.Opened != nil || fx.Closed != nil || fx.Probed != nil }

// IncidentProbe is a failed probe's answer, for the incident's record.
type IncidentProbe struct {
	ID     string
	Answer string
	At     time.Time
}

// IncidentEvents are the audit events of what an answer to op did to its
// key's incidents, appended with the save that observed it: the outbox
// turns them into incident.opened and incident.closed.
func IncidentEvents(op *Operation, fx IncidentEffects, now time.Time) []Event {
	var evs []Event
	if c := fx.Closed; c != nil {
		evs = append(evs, Event{OperationID: op.ID, At: now, Kind: EventIncidentClosed,
			Data: EventData{Incident: c.ID, Detail: c.ClosedBy}})
	}
	if o := fx.Opened; o != nil {
		evs = append(evs, Event{OperationID: op.ID, At: now, Kind: EventIncidentOpened,
			Data: EventData{Incident: o.ID, Detail: "incident " + o.ID + " (" + string(o.Kind) + ") opened under " + o.Key + ": " + o.What}})
	}
	return evs
}
