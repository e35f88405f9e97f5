package webhook

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/present"
)

// TestRequestSpeaksThePresentWords: a decision request's facts and option
// lines (JSON, Slack, e-mail) are package present's words, the ones the
// stored decision request and the console use: a transport failure reads
// "no answer at", the provider's own state is named, and each option's
// cost and new limit read the same wherever they are shown.
func TestRequestSpeaksThePresentWords(t *testing.T) {
	at := time.Date(2026, 4, 18, 10, 59, 0, 0, time.UTC)
	dl := at.Add(time.Hour)
	opts := []pollwarden.Option{{ID: pollwarden.OptionExtend, Label: "Extend", ExtraTime: "1h", ExtraStatusRequests: 5, NewDeadline: &dl, NewMaxStatusRequests: 15},
		{ID: pollwarden.OptionAbandon, Label: "Stop"}}
	op := &pollwarden.Operation{ID: "op-1", Contract: "c", ProviderJobID: "j", Phase: pollwarden.PhaseEscalated, LastState: "queued",
		LastProviderState: "QUEUED", LastHTTPAt: &at, Escalation: &pollwarden.Escalation{Options: opts}}
	r := newRequest(event{class: ClassEscalated}, pollwarden.Event{At: at}, pollwarden.EventData{Reason: pollwarden.ReasonDeadlineExceeded}, op, "")
	facts := map[string]string{}
	for _, f := range r.Facts {
		facts[f.Name] = f.Value
	}
	if facts["Last state"] != present.LastState(op) || facts["Last HTTP result"] != present.LastHTTP(op) || facts["Last HTTP result"] != "no answer at 10:59:00 UTC" {
		t.Errorf("facts %v: want present's last state %q and last HTTP %q", facts, present.LastState(op), present.LastHTTP(op))
	}
	for i, o := range r.Options {
		if o.Cost != present.OptionCost(opts[i]) || o.NewLimit != present.OptionNewLimit(opts[i]) {
			t.Errorf("option %s: cost %q, new limit %q; want present's", o.ID, o.Cost, o.NewLimit)
		}
	}
}
