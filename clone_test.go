package pollwarden

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestCloneSharesNothing: a clone is equal to its record, and changing
// anything a clone points to leaves the record as it was. Decide relies on
// it when it overwrites its clone's last-answer time in place.
func TestCloneSharesNothing(t *testing.T) {
	at := func(s int) *time.Time { v := time.Date(2031, 1, 1, 0, 0, s, 0, time.UTC); return &v }
	op := &Operation{
		ID: "op", ExpectedTerminal: []string{"done"}, Vars: map[string]string{"region": "eu"},
		Result: json.RawMessage(`{"a":1}`), ProviderError: json.RawMessage(`{"e":1}`),
		BusinessDeadlineAt: at(1), ProviderExpiresAt: at(2), LastHTTPAt: at(3), FinishedAt: at(4),
		Escalation:        &Escalation{Options: []Option{{ID: "extend"}}, Decided: &DecisionRecord{Option: "abandon"}},
		LastDecision:      &DecisionRecord{Option: "extend"},
		RefusedCredential: &RefusedCredential{MAC: "m"},
		ExtensionAsked:    &ExtensionAsk{By: "agent"},
		Cancel:            &CancelRecord{AnsweredAt: at(5)},
		Submission:        &Submission{State: "sent", Body: json.RawMessage(`{"b":2}`)},
		ContractLimits:    &ContractLimits{MaxStatusRequests: 7},
		ContractDigest:    map[string]string{"status": "abc"},
	}
	keep, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	c := op.Clone()
	if !reflect.DeepEqual(c, op) {
		t.Fatalf("the clone differs from its record:\n%+v\n%+v", c, op)
	}
	c.ExpectedTerminal[0] = "x"
	c.Vars["region"] = "us"
	c.Result[2], c.ProviderError[2] = 'z', 'z'
	for _, p := range []*time.Time{c.BusinessDeadlineAt, c.ProviderExpiresAt, c.LastHTTPAt, c.FinishedAt, c.Cancel.AnsweredAt} {
		*p = p.Add(time.Hour)
	}
	c.Escalation.Options[0].ID = "x"
	c.Escalation.Decided.Option = "x"
	c.LastDecision.Option = "x"
	c.RefusedCredential.MAC = "x"
	c.ExtensionAsked.By = "x"
	c.Submission.Body[2] = 'z'
	c.ContractLimits.MaxStatusRequests = 99
	c.ContractDigest["status"] = "x"
	got, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(keep) {
		t.Fatalf("changing the clone changed its record:\n%s\nwas\n%s", got, keep)
	}
}

// TestCloneNextSharesOnlyTheMaps: CloneNext is Clone but for Vars and
// ContractDigest, which it shares with its record (a step never changes
// them in place); everything else a clone points to is its own.
func TestCloneNextSharesOnlyTheMaps(t *testing.T) {
	at := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	op := &Operation{ID: "op", ExpectedTerminal: []string{"done"}, Vars: map[string]string{"region": "eu"},
		LastHTTPAt: &at, ContractDigest: map[string]string{"status": "abc"}}
	c := op.CloneNext()
	if !reflect.DeepEqual(c, op) {
		t.Fatalf("the clone differs from its record:\n%+v\n%+v", c, op)
	}
	c.ExpectedTerminal[0] = "x"
	*c.LastHTTPAt = at.Add(time.Hour)
	if op.ExpectedTerminal[0] != "done" || !op.LastHTTPAt.Equal(at) {
		t.Fatalf("changing the clone changed its record: %+v", op)
	}
	c.Vars["region"] = "us"
	if op.Vars["region"] != "us" {
		t.Fatal("CloneNext copied Vars: a decision pays for a map it never changes")
	}
}
