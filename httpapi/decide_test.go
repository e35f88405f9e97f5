package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestExtensionRequestGrantsNothing: an agent may ask, and the request is
// on the record, but limits and phase stay as they were (R20).
func TestExtensionRequestGrantsNothing(t *testing.T) {
	r := newRig(t)
	before := r.escalated("op-x", "export")
	a := r.do("POST", "/v1/operations/op-x/extension-requests", agentToken,
		map[string]any{"extra_time": "30m", "extra_status_requests": 10, "justification": "the export has 2M rows"})
	if a.status != http.StatusAccepted {
		t.Fatalf("%d %s", a.status, a.body)
	}
	after := r.stored("op-x")
	if after.Phase != pollwarden.PhaseEscalated || after.MaxStatusRequests != before.MaxStatusRequests ||
		!after.DeadlineAt.Equal(before.DeadlineAt) || after.StatusRequestsUsed != before.StatusRequestsUsed {
		t.Errorf("an extension request changed the record: %+v", after)
	}
	rec := a.json(t)
	if rec["max_status_requests"] != float64(before.MaxStatusRequests) || rec["phase"] != "escalated" {
		t.Errorf("answer: %s", a.body)
	}
	story := r.do("GET", "/v1/operations/op-x/audit", agentToken, nil)
	if !strings.Contains(string(story.body), `build-agent (agent) asked for more: 30m0s and 10 more status requests, justification "the export has 2M rows" (grants nothing)`) {
		t.Errorf("story lacks the request:\n%s", story.body)
	}
}

func TestExtensionRequestRefused(t *testing.T) {
	r := newRig(t)
	r.fp.Script("j", fp.State("running", nil))
	r.create("op-w", "j", nil)
	for name, body := range map[string]map[string]any{
		"nothing asked":     {"extra_time": "0s", "extra_status_requests": 0, "justification": "x"},
		"negative time":     {"extra_time": "-5m", "extra_status_requests": 1, "justification": "x"},
		"garbage time":      {"extra_time": "later", "extra_status_requests": 1, "justification": "x"},
		"negative requests": {"extra_time": "5m", "extra_status_requests": -1, "justification": "x"},
		"no justification":  {"extra_time": "5m", "extra_status_requests": 1, "justification": "  "},
		"missing all three": {},
	} {
		if a := r.do("POST", "/v1/operations/op-w/extension-requests", agentToken, body); a.status != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d %s", name, a.status, a.body)
		}
	}
	ok := map[string]any{"extra_time": "5m", "extra_status_requests": 1, "justification": "x"}
	if a := r.do("POST", "/v1/operations/nope/extension-requests", agentToken, ok); a.status != http.StatusNotFound {
		t.Errorf("unknown op: %d", a.status)
	}
	r.fp.Script("d", fp.Succeeded("https://files.example.com/r.csv"))
	r.create("op-done", "d", nil)
	r.settle("op-done")
	if a := r.do("POST", "/v1/operations/op-done/extension-requests", agentToken, ok); a.status != http.StatusConflict {
		t.Errorf("finished op: %d %s", a.status, a.body)
	}
	evs, _ := r.store.EventList(context.Background(), "op-w")
	for _, e := range evs {
		if e.Kind == pollwarden.EventExtensionRequested {
			t.Error("a refused extension request was recorded")
		}
	}
}

// TestApproverExtends: the extend decision returns the operation to
// waiting with the new deadline and budget, counters intact, and polling
// resumes from there.
func TestApproverExtends(t *testing.T) {
	r := newRig(t)
	before := r.escalated("op-e", "export")
	if before.Reason != pollwarden.ReasonRequestBudgetExhausted || before.StatusRequestsUsed != 1 {
		t.Fatalf("setup: %+v", before)
	}
	a := r.do("POST", "/v1/operations/op-e/decisions", approverToken, map[string]any{"option": "extend", "note": "big export"})
	if a.status != http.StatusOK {
		t.Fatalf("%d %s", a.status, a.body)
	}
	rec := a.json(t)
	if rec["phase"] != "waiting" || rec["max_status_requests"] != 5.0 || rec["status_requests_used"] != 1.0 || rec["escalation"] != nil {
		t.Errorf("after extend: %s", a.body)
	}
	after := r.stored("op-e")
	if !after.DeadlineAt.After(before.DeadlineAt) || after.StatusRequestsUsed != 1 || after.MaxStatusRequests != 5 {
		t.Errorf("stored after extend: deadline %s (was %s), %d/%d", after.DeadlineAt, before.DeadlineAt, after.StatusRequestsUsed, after.MaxStatusRequests)
	}
	r.fp.Script("job-op-e", fp.Succeeded("https://files.example.com/r.csv"))
	final := r.settle("op-e")
	if final.Phase != pollwarden.PhaseSucceeded || final.StatusRequestsUsed != 2 {
		t.Errorf("after resuming: %s with %d requests", final.Phase, final.StatusRequestsUsed)
	}
	evs, _ := r.store.EventList(context.Background(), "op-e")
	var decision *pollwarden.Event
	for i := range evs {
		if evs[i].Kind == pollwarden.EventDecision {
			decision = &evs[i]
		}
	}
	if decision == nil || decision.Data.Actor == nil || decision.Data.Actor.Name != "alice" || decision.Data.Actor.Role != pollwarden.RoleApprover || decision.Data.Detail != "big export" {
		t.Errorf("decision event: %+v", decision)
	}
}

func TestDecisionRefused(t *testing.T) {
	r := newRig(t)
	r.escalated("op-e", "export")
	r.escalated("op-p", "plain")
	r.fp.Script("j", fp.State("running", nil))
	r.create("op-w", "j", nil)
	for name, tc := range map[string]struct {
		id, option string
		status     int
		want       string
	}{
		"option not offered": {"op-e", "approve_call", 409, `option "approve_call" is not offered for operation op-e; choose one of extend, cancel_at_provider, inspect_console, abandon`},
		"made-up option":     {"op-e", "continue", 409, "not offered"},
		"not escalated":      {"op-w", "extend", 409, "op-w is waiting, not escalated"},
		"no cancel action":   {"op-p", "cancel_at_provider", 409, "contract plain documents no cancel action"},
		"empty option":       {"op-e", "", 422, "option is required"},
		"unknown operation":  {"nope", "extend", 404, "no operation"},
	} {
		a := r.do("POST", "/v1/operations/"+tc.id+"/decisions", approverToken, map[string]any{"option": tc.option})
		if a.status != tc.status || !strings.Contains(a.message(t), tc.want) {
			t.Errorf("%s: %d %s, want %d with %q", name, a.status, a.body, tc.status, tc.want)
		}
	}
	if op := r.stored("op-e"); op.Phase != pollwarden.PhaseEscalated {
		t.Errorf("a refused decision changed op-e: %s", op.Phase)
	}
}

// TestCancel runs the contract's cancel call once, as its own action.
func TestCancel(t *testing.T) {
	r := newRig(t)
	r.escalated("op-c", "export")
	a := r.do("POST", "/v1/operations/op-c/cancel", approverToken, map[string]any{"note": "customer gave up"})
	if a.status != http.StatusOK || a.json(t)["phase"] != "cancelled" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if n := r.fp.Cancels("job-op-c"); n != 1 {
		t.Errorf("the provider saw %d cancel calls, want 1", n)
	}
	// A second cancel sends nothing and answers the record as it is.
	again := r.do("POST", "/v1/operations/op-c/cancel", approverToken, nil)
	if again.status != http.StatusOK || again.json(t)["phase"] != "cancelled" {
		t.Errorf("second cancel: %d %s", again.status, again.body)
	}
	if n := r.fp.Cancels("job-op-c"); n != 1 {
		t.Errorf("a second cancel reached the provider (%d calls)", n)
	}
	evs, _ := r.store.EventList(context.Background(), "op-c")
	kinds := []pollwarden.EventKind{}
	for _, e := range evs[len(evs)-4:] {
		kinds = append(kinds, e.Kind)
	}
	if kinds[0] != pollwarden.EventDecision || kinds[1] != pollwarden.EventAction || kinds[3] != pollwarden.EventFinished {
		t.Errorf("last events %v, want decision, action, then the provider's end (R23)", kinds)
	}

	// A waiting operation may be cancelled at any time.
	r.fp.Script("j", fp.State("running", nil))
	r.create("op-w", "j", nil)
	if a := r.do("POST", "/v1/operations/op-w/cancel", approverToken, nil); a.status != http.StatusOK || a.json(t)["phase"] != "cancelled" || r.fp.Cancels("j") != 1 {
		t.Errorf("cancel of a waiting op: %d %s", a.status, a.body)
	}
	if a := r.do("POST", "/v1/operations/op-w/cancel", agentToken, nil); a.status != http.StatusForbidden {
		t.Errorf("an agent's cancel: %d %s", a.status, a.body)
	}
	r.escalated("op-p", "plain")
	if a := r.do("POST", "/v1/operations/op-p/cancel", approverToken, nil); a.status != http.StatusConflict ||
		!strings.Contains(a.message(t), "documents no cancel action") {
		t.Errorf("cancel without a cancel action: %d %s", a.status, a.body)
	}
}

// TestCancelRefusedByProvider: a cancel the provider refuses is still a
// sent cancel: the operation stays cancelling, observing the job, whose
// own state decides; the story says what the provider answered.
func TestCancelRefusedByProvider(t *testing.T) {
	r := newRig(t)
	r.escalated("op-c", "export")
	r.fp.RequireToken("another-token")
	a := r.do("POST", "/v1/operations/op-c/cancel", approverToken, nil)
	if a.status != http.StatusOK || a.json(t)["phase"] != "cancelling" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	story := r.do("GET", "/v1/operations/op-c/audit", approverToken, nil)
	if !strings.Contains(string(story.body), "cancel sent, provider answered 401") {
		t.Errorf("story:\n%s", story.body)
	}
}

// TestExtensionRequestWaitsForStep: a request that arrives while a status
// request is in flight (another owner holds the lease) is recorded once
// the lease is free, not refused.
func TestExtensionRequestWaitsForStep(t *testing.T) {
	r := newRig(t)
	r.fp.Script("j", fp.State("running", nil))
	r.create("op-w", "j", nil)
	if _, err := r.store.LeaseAcquire(context.Background(), pollwarden.LeaseParams{
		OperationID: "op-w", Owner: "another-process", Now: time.Now(), TTL: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	a := r.do("POST", "/v1/operations/op-w/extension-requests", agentToken,
		map[string]any{"extra_time": "5m", "extra_status_requests": 1, "justification": "slow"})
	if a.status != http.StatusAccepted {
		t.Fatalf("%d %s", a.status, a.body)
	}
}

// TestExtensionOfferedAsAsked: an agent's request for 30m and 10 requests,
// made on an escalated operation, is the extend option an approver reads
// and chooses, within the contract's bounds (15m/4, so up to 1h/16); the
// contract's fixed 15m is not what is granted.
func TestExtensionOfferedAsAsked(t *testing.T) {
	r := newRig(t)
	before := r.escalated("op-a", "export")
	if a := r.do("POST", "/v1/operations/op-a/extension-requests", agentToken,
		map[string]any{"extra_time": "30m", "extra_status_requests": 10, "justification": "the export has 2M rows"}); a.status != http.StatusAccepted {
		t.Fatalf("%d %s", a.status, a.body)
	}
	got := r.do("GET", "/v1/operations/op-a", approverToken, nil)
	var rec struct {
		Escalation struct {
			ID      string              `json:"id"`
			Message string              `json:"message"`
			Options []pollwarden.Option `json:"options"`
		} `json:"escalation"`
	}
	if err := json.Unmarshal(got.body, &rec); err != nil {
		t.Fatal(err)
	}
	var ext *pollwarden.Option
	for i, o := range rec.Escalation.Options {
		if o.ID == pollwarden.OptionExtend {
			ext = &rec.Escalation.Options[i]
		}
	}
	if ext == nil || ext.ExtraTime != "30m" || ext.ExtraStatusRequests != 10 ||
		!strings.HasPrefix(ext.Label, "Extend waiting once by 30 minutes with 10 more status requests") ||
		!strings.Contains(ext.Label, "build-agent asked for 30m and 10 more status requests") {
		t.Fatalf("extend is not offered as asked: %+v", rec.Escalation)
	}
	d := r.do("POST", "/v1/operations/op-a/decisions", approverToken, map[string]any{"option": "extend", "escalation": rec.Escalation.ID})
	if d.status != http.StatusOK {
		t.Fatalf("%d %s", d.status, d.body)
	}
	after := r.stored("op-a")
	if after.MaxStatusRequests != before.MaxStatusRequests+10 || !after.DeadlineAt.Equal(*ext.NewDeadline) ||
		after.DeadlineAt.Sub(before.DeadlineAt) < 30*time.Minute {
		t.Fatalf("granted deadline %s (was %s, offered %s) budget %d (was %d)", after.DeadlineAt, before.DeadlineAt, ext.NewDeadline,
			after.MaxStatusRequests, before.MaxStatusRequests)
	}
}
