package policy

import (
	"fmt"
	"strconv"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// nextEscalationID numbers op's next escalation. A count kept in the
// record is unique per operation and survives restarts; the id only has
// to tell one question from another, not be hard to guess (deciding takes
// an approver's authority anyway).
func nextEscalationID(op *pollwarden.Operation) string {
	op.Escalations++
	return "esc-" + strconv.Itoa(op.Escalations)
}

// CheckQuestion refuses a decision that names an escalation other than
// op's open question: the approver answered a question that was already
// answered, or that was replaced by another. It runs on the record as read
// for the save, whose version check then makes two answers to one question
// one decision. An empty id answers the current question.
func CheckQuestion(op *pollwarden.Operation, id string) error {
	if id == "" {
		return nil
	}
	cur := op.Escalation
	open := cur != nil && cur.Decided == nil && op.Phase.AwaitsDecision()
	switch {
	case open && cur.ID == id:
		return nil
	case op.LastDecision != nil && op.LastDecision.Escalation == id:
		return pollwarden.Refuse(pollwarden.ErrPhase, "escalation", "escalation %s of operation %s was already decided: %s",
			display.Value(id), op.ID, DecisionText(op.LastDecision))
	case open:
		return pollwarden.Refuse(pollwarden.ErrPhase, "escalation", "escalation %s is not the open question of operation %s; the open one is %s (read the operation again)",
			display.Value(id), op.ID, cur.ID)
	}
	return pollwarden.Refuse(pollwarden.ErrPhase, "escalation", "escalation %s is not open: operation %s is %s and asks no question now",
		display.Value(id), op.ID, op.Phase)
}

// DecisionText says who decided what and when, in one line.
func DecisionText(d *pollwarden.DecisionRecord) string {
	s := fmt.Sprintf("%s by %s (%s) at %s", d.Option, display.Value(d.By.Name), d.By.Role, d.At.UTC().Format("2006-01-02 15:04:05 UTC"))
	if d.Outcome != "" {
		s += ": " + display.Text(d.Outcome)
	}
	return s
}

// decided records d as op's latest decision and, when op keeps the
// escalation it answered (an abandon closes the record with it), marks
// that question answered: the message then says who decided what and
// when instead of asking.
func decided(op *pollwarden.Operation, d *pollwarden.DecisionRecord) {
	op.LastDecision = d
	if op.Escalation == nil || d.Option == pollwarden.OptionInspect {
		return
	}
	e := *d
	op.Escalation.Decided = &e
	op.Escalation.Message = "Decided: " + DecisionText(d)
}

// decisionRecord is the record of actor's answer with option to op's
// escalation (none for a waiting operation).
func decisionRecord(op *pollwarden.Operation, option string, actor pollwarden.Actor, now time.Time, outcome string) *pollwarden.DecisionRecord {
	d := &pollwarden.DecisionRecord{Option: option, By: actor, At: now, Outcome: outcome}
	if op.Escalation != nil && op.Escalation.Decided == nil {
		d.Escalation = op.Escalation.ID
	}
	return d
}
