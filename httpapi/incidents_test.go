package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// credentialIncident refuses op-r's credential (401) and steps op-h1 and
// op-h2, which the incident then holds; it returns the incident's id.
func (r *rig) credentialIncident() string {
	r.t.Helper()
	ctx := context.Background()
	ex, _ := r.contracts.Get("export")
	r.fp.Script("jr", fp.Code(401, nil))
	r.create("op-r", "jr", nil)
	if res, err := r.ctl.Step(ctx, ex, "op-r"); err != nil || res.Op.Reason != pollwarden.ReasonAuthorizationDenied {
		r.t.Fatalf("the refused step: %+v, %v", res.Op, err)
	}
	for _, id := range []string{"op-h1", "op-h2"} {
		r.fp.Script("j"+id, fp.State("running", nil))
		r.create(id, "j"+id, nil)
		if res, err := r.ctl.Step(ctx, ex, id); err != nil || res.Sent {
			r.t.Fatalf("%s under the refused credential: sent %v, %v", id, res.Sent, err)
		}
	}
	list, err := r.store.IncidentList(ctx, pollwarden.IncidentListParams{OpenOnly: true})
	if err != nil || len(list) != 1 {
		r.t.Fatalf("open incidents: %+v, %v", list, err)
	}
	return list[0].ID
}

// An approver reads the incidents, and one decision abandons every
// operation the incident holds; the bad requests are refused, each with
// its status and nothing changed.
func TestIncidentDecisionAppliesToEveryHeldOperation(t *testing.T) {
	r := newRig(t)
	id := r.credentialIncident()
	path := "/v1/incidents/" + id
	if a := r.do("GET", "/v1/incidents", agentToken, nil); a.status != http.StatusForbidden {
		t.Fatalf("an agent lists incidents: %d %s", a.status, a.body)
	}
	if a := r.do("POST", path+"/decisions", agentToken, map[string]any{"option": "abandon"}); a.status != http.StatusForbidden {
		t.Fatalf("an agent decides an incident: %d %s", a.status, a.body)
	}
	a := r.do("GET", "/v1/incidents", approverToken, nil)
	list, _ := a.json(t)["incidents"].([]any)
	if a.status != http.StatusOK || len(list) != 1 {
		t.Fatalf("list: %d %s", a.status, a.body)
	}
	inc := list[0].(map[string]any)
	if inc["id"] != id || inc["kind"] != "credential" || inc["held"] != float64(2) || inc["what"] != "HTTP 401" || inc["key"] != "env:API_TOKEN" {
		t.Fatalf("incident as listed: %s", a.body)
	}
	if a := r.do("GET", "/v1/incidents/inc-0000000000000000", approverToken, nil); a.status != http.StatusNotFound || !strings.Contains(a.message(t), `no incident "inc-0000000000000000"`) {
		t.Fatalf("an unknown incident: %d %s", a.status, a.body)
	}
	if a := r.do("POST", "/v1/incidents/inc-0000000000000000/decisions", approverToken, map[string]any{"option": "abandon"}); a.status != http.StatusNotFound {
		t.Fatalf("a decision on an unknown incident: %d %s", a.status, a.body)
	}
	if a := r.do("POST", path+"/decisions", approverToken, map[string]any{"option": "reboot"}); a.status != http.StatusBadRequest || a.errorCode(t) != codeBadRequest || !strings.Contains(a.message(t), `option "reboot" is not an incident`) {
		t.Fatalf("an unknown option: %d %s", a.status, a.body)
	}
	if a := r.do("POST", path+"/decisions", approverToken, map[string]any{"option": "abandon", "mood": "x"}); a.status != http.StatusBadRequest {
		t.Fatalf("an unknown field: %d %s", a.status, a.body)
	}
	if a := r.do("POST", path+"/decisions", approverToken, map[string]any{"option": "abandon", "note": strings.Repeat("n", 2001)}); a.status != http.StatusUnprocessableEntity {
		t.Fatalf("a note too long: %d %s", a.status, a.body)
	}
	// The credential is still the refused one: never retried.
	if a := r.do("POST", path+"/decisions", approverToken, map[string]any{"option": "retry_credential"}); a.status != http.StatusConflict || !strings.Contains(a.message(t), "is the one the provider refused") {
		t.Fatalf("retry with the same credential: %d %s", a.status, a.body)
	}
	for _, op := range []string{"op-r", "op-h1", "op-h2"} {
		if st := r.stored(op); st.Phase.Finished() {
			t.Fatalf("a refused decision changed %s: %s", op, st.Phase)
		}
	}
	a = r.do("POST", path+"/decisions", approverToken, map[string]any{"option": "abandon", "note": "token revoked for good"})
	if a.status != http.StatusOK {
		t.Fatalf("abandon: %d %s", a.status, a.body)
	}
	var applied []string
	for _, v := range a.json(t)["applied"].([]any) {
		applied = append(applied, v.(string))
	}
	slices.Sort(applied)
	if !slices.Equal(applied, []string{"op-h1", "op-h2", "op-r"}) {
		t.Fatalf("applied to %v, want every held operation and the refused one: %s", applied, a.body)
	}
	for _, op := range applied {
		if st := r.stored(op); !st.Phase.Finished() || st.LastDecision == nil || st.LastDecision.By.Name != "alice" {
			t.Fatalf("%s after the incident's abandon: %s %+v", op, st.Phase, st.LastDecision)
		}
	}
	got := r.do("GET", path, approverToken, nil).json(t)
	if got["closed_at"] == nil || got["held"] != float64(0) || !strings.Contains(got["closed_by"].(string), "abandon by alice") {
		t.Fatalf("the incident after the decision: %v", got)
	}
	if a := r.do("POST", path+"/decisions", approverToken, map[string]any{"option": "abandon"}); a.status != http.StatusConflict || !strings.Contains(a.message(t), "is closed") {
		t.Fatalf("a decision on a closed incident: %d %s", a.status, a.body)
	}
}
