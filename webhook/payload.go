package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pollwarden/pollwarden"
)

// Body is what every webhook POSTs, in the Standard Webhooks payload shape:
// type, the time of the audit event that caused it, and the operation's
// public outcome (the field names of `wait --json`; never a secret).
type Body struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      Data      `json:"data"`
}

// Data is the outcome as read when the message was enqueued, and the
// audit position of the event it announces.
type Data struct {
	pollwarden.Outcome
	EventPos int64 `json:"event_pos"`
}

// event is what one audit event calls for: a class, a type and the key
// that makes it unique per endpoint; ok is false for events that call for
// no webhook.
type event struct {
	class, typ, key string
}

// classify maps an audit event to a webhook. Each escalation is its own
// message. The final outcome is one message per operation (key
// final/<id>), whichever event reached it: a poll's success or finish, an
// approver's abandon (a decision) or a cancel that worked (an action); the
// stored record's phase, not the event's payload, says which, so sealed
// stores need no key.
func classify(ev pollwarden.Event, op *pollwarden.Operation) (event, bool) {
	switch ev.Kind {
	case pollwarden.EventEscalated:
		return event{ClassEscalated, "operation.escalated", "escalated/" + strconv.FormatInt(ev.Pos, 10)}, true
	case pollwarden.EventDecisionReminder:
		return event{ClassReminder, "operation.decision_reminder", "reminder/" + strconv.FormatInt(ev.Pos, 10)}, true
	case pollwarden.EventDecisionExpired:
		return event{ClassExpiry, "operation.decision_expired", "expiry/" + strconv.FormatInt(ev.Pos, 10)}, true
	case pollwarden.EventSucceeded, pollwarden.EventFinished, pollwarden.EventDecision, pollwarden.EventAction:
		if op.Phase.Finished() {
			return event{ClassFinal, "operation." + string(op.Phase), "final/" + op.ID}, true
		}
	}
	return event{}, false
}

// jsonBody encodes a webhook's JSON body.
func jsonBody(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode webhook body: %w", err)
	}
	return b, nil
}

// messageID is the webhook-id of the event at ev: derived from its chain
// hash, so it is stable across retries, replicas and restarts, and unique
// across stores.
func messageID(ev pollwarden.Event) string {
	h := sha256.Sum256([]byte(ev.Hash + "/" + strconv.FormatInt(ev.Pos, 10)))
	return "pw_" + hex.EncodeToString(h[:16])
}

// messages turns a page of raw audit events into outbox messages, one per
// subscribed endpoint.
func (d *Dispatcher) messages(ctx context.Context, evs []pollwarden.Event) ([]pollwarden.OutboxMessage, error) {
	ops := map[string]*pollwarden.Operation{}
	seen := map[string]bool{}
	now := d.clock.Now()
	var out []pollwarden.OutboxMessage
	for _, ev := range evs {
		switch ev.Kind {
		case pollwarden.EventIncidentOpened, pollwarden.EventIncidentClosed:
			e, ok := incidentEvent(ev, d.eventData(ctx, ev))
			if !ok || seen[e.key] {
				continue
			}
			seen[e.key] = true
			msgs, err := d.incidentMessages(ctx, e, ev, d.eventData(ctx, ev), now)
			if err != nil {
				return nil, err
			}
			out = append(out, msgs...)
			continue
		case pollwarden.EventEscalated, pollwarden.EventSucceeded, pollwarden.EventFinished, pollwarden.EventDecision, pollwarden.EventAction,
			pollwarden.EventDecisionReminder, pollwarden.EventDecisionExpired:
		default:
			continue
		}
		op, ok := ops[ev.OperationID]
		if !ok {
			var err error
			op, err = d.store.OperationGet(ctx, ev.OperationID)
			if errors.Is(err, pollwarden.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			ops[ev.OperationID] = op
		}
		e, ok := classify(ev, op)
		if !ok || seen[e.key] {
			continue
		}
		seen[e.key] = true
		body, err := jsonBody(Body{Type: e.typ, Timestamp: ev.At.UTC(), Data: Data{Outcome: pollwarden.OutcomeOf(op), EventPos: ev.Pos}})
		if err != nil {
			return nil, err
		}
		bodies := map[string][]byte{FormatStandard: body}
		for _, ep := range d.cfg.Endpoints {
			if !ep.Wants(e.class) {
				continue
			}
			b, ok := bodies[ep.Format]
			if ep.Format == "" {
				b, ok = body, true
			}
			if !ok {
				if b, err = d.render(ctx, ep, e, ev, op); err != nil {
					return nil, err
				}
				if ep.Format != FormatEmail { // an e-mail names its own recipients
					bodies[ep.Format] = b
				}
			}
			out = append(out, pollwarden.OutboxMessage{ID: messageID(ev), Key: e.key, Endpoint: ep.Name, EventPos: ev.Pos,
				OperationID: ev.OperationID, Type: e.typ, Body: b, CreatedAt: now})
		}
	}
	return out, nil
}

// enqueue turns the events after the cursor into messages, a page at a
// time; more is true while there may be further pages. On a store's first
// run the cursor starts at the audit head: history from before webhooks
// were configured is not replayed.
func (d *Dispatcher) enqueue(ctx context.Context) (more bool, err error) {
	cur, err := d.outbox.OutboxCursor(ctx)
	if err != nil {
		return false, err
	}
	if cur < 0 {
		return true, d.start(ctx)
	}
	evs, err := d.store.EventScan(ctx, pollwarden.EventScanParams{AfterPos: cur, Limit: scanPage})
	if err != nil || len(evs) == 0 {
		return false, err
	}
	msgs, err := d.messages(ctx, evs)
	if err != nil {
		return false, err
	}
	err = d.outbox.OutboxEnqueue(ctx, pollwarden.OutboxEnqueueParams{From: cur, To: evs[len(evs)-1].Pos, Messages: msgs})
	return true, ignoreConflict(err)
}

// scanPage is how many audit events one enqueue reads.
const scanPage = 256

// ignoreConflict: another dispatcher moved the cursor first and enqueued
// the same events; reading from the new cursor is all there is to do.
func ignoreConflict(err error) error {
	if errors.Is(err, pollwarden.ErrConflict) {
		return nil
	}
	return err
}

// Init sets the cursor at the audit head on a store's first run with
// webhooks, so that every event appended after Init returns is sent; a
// daemon calls it before it accepts work. It does nothing once the cursor
// is set.
func (d *Dispatcher) Init(ctx context.Context) error {
	cur, err := d.outbox.OutboxCursor(ctx)
	if err != nil || cur >= 0 {
		return err
	}
	return d.start(ctx)
}

func (d *Dispatcher) start(ctx context.Context) error {
	head, _, err := d.store.AuditHead(ctx)
	if err != nil {
		return err
	}
	err = d.outbox.OutboxEnqueue(ctx, pollwarden.OutboxEnqueueParams{From: -1, To: head})
	if err == nil {
		d.log.Info("webhooks start after the current audit head; earlier events are not sent", "audit_pos", head)
	}
	return ignoreConflict(err)
}
