package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

func TestGetAndList(t *testing.T) {
	r := newRig(t)
	r.fp.Script("j", fp.State("running", nil))
	r.create("op-w", "j", nil)
	r.escalated("op-e", "export")

	a := r.do("GET", "/v1/operations/op-e", agentToken, nil)
	rec := a.json(t)
	if a.status != http.StatusOK || rec["phase"] != "escalated" || rec["outcome"] != "escalated" || rec["reason"] != "request_budget_exhausted" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	esc, _ := rec["escalation"].(map[string]any)
	if esc == nil || !strings.Contains(esc["message"].(string), "Status requests: 1 of 1") {
		t.Errorf("escalation: %v", rec["escalation"])
	}
	// Every field of the outcome JSON is present (SPEC), null or not.
	for _, k := range []string{"operation_id", "contract", "provider_job_id", "phase", "outcome", "reason", "last_state", "result",
		"provider_error", "status_requests_used", "max_status_requests", "transport_failures_used", "max_transport_failures",
		"started_at", "deadline_at", "finished_at", "last_http_status", "last_http_at", "escalation"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("record lacks %q", k)
		}
	}

	list := func(query string) []string {
		t.Helper()
		a := r.do("GET", "/v1/operations"+query, agentToken, nil)
		if a.status != http.StatusOK {
			t.Fatalf("list%s: %d %s", query, a.status, a.body)
		}
		var out struct {
			Operations []struct {
				ID    string `json:"operation_id"`
				Phase string `json:"phase"`
			} `json:"operations"`
		}
		if err := json.Unmarshal(a.body, &out); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range out.Operations {
			ids = append(ids, o.ID+"="+o.Phase)
		}
		return ids
	}
	if got := strings.Join(list(""), " "); got != "op-e=escalated op-w=waiting" {
		t.Errorf("list: %s", got)
	}
	if got := strings.Join(list("?phase=escalated"), " "); got != "op-e=escalated" {
		t.Errorf("list escalated: %s", got)
	}
	if got := list("?phase=failed"); len(got) != 0 {
		t.Errorf("list failed: %v", got)
	}
	if got := strings.Join(list("?limit=1"), " "); got != "op-e=escalated" {
		t.Errorf("list limit 1: %s", got)
	}
	for _, q := range []string{"?phase=done", "?phase=ESCALATED", "?limit=0", "?limit=5000", "?limit=x"} {
		if a := r.do("GET", "/v1/operations"+q, agentToken, nil); a.status != http.StatusUnprocessableEntity {
			t.Errorf("list%s: %d", q, a.status)
		}
	}
	if a := r.do("GET", "/v1/operations/nope", agentToken, nil); a.status != http.StatusNotFound || a.errorCode(t) != codeNotFound {
		t.Errorf("unknown op: %d %s", a.status, a.body)
	}
}

func TestAudit(t *testing.T) {
	r := newRig(t)
	r.fp.Script("j", fp.State("running", nil), fp.Succeeded("https://files.example.com/r.csv"))
	r.create("op-a", "j", nil)
	r.settle("op-a")

	text := r.do("GET", "/v1/operations/op-a/audit", agentToken, nil)
	if text.status != http.StatusOK || !strings.HasPrefix(text.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("%d %s %s", text.status, text.header.Get("Content-Type"), text.body)
	}
	story := string(text.body)
	for _, want := range []string{"started watching job j, deadline", "status request 1 of 5: state running, next poll",
		"status request 2 of 5: state running → succeeded", "succeeded after 2 of 5 status requests"} {
		if !strings.Contains(story, want) {
			t.Errorf("story lacks %q:\n%s", want, story)
		}
	}

	for _, accept := range []string{"application/json", "text/html;q=0.9, application/json"} {
		a := r.do("GET", "/v1/operations/op-a/audit", agentToken, nil, "Accept", accept)
		if a.status != http.StatusOK || a.header.Get("Content-Type") != "application/json" {
			t.Fatalf("Accept %s: %d %s", accept, a.status, a.header.Get("Content-Type"))
		}
		var out struct {
			OperationID string `json:"operation_id"`
			Events      []struct {
				Seq  int64  `json:"seq"`
				Kind string `json:"kind"`
				Hash string `json:"hash"`
			} `json:"events"`
		}
		if err := json.Unmarshal(a.body, &out); err != nil {
			t.Fatal(err)
		}
		// The story tells each request with its answer on one line; the
		// JSON has every event.
		sent := 0
		for _, e := range out.Events {
			if e.Kind == "status_request_sent" {
				sent++
			}
		}
		if out.OperationID != "op-a" || sent != strings.Count(story, " status request ") || len(out.Events) <= strings.Count(story, "\n") {
			t.Errorf("%d events, %d requests sent, for %d story lines", len(out.Events), sent, strings.Count(story, "\n"))
		}
		if out.Events[0].Kind != "submitted" || out.Events[len(out.Events)-1].Kind != "succeeded" || out.Events[0].Hash == "" {
			t.Errorf("events: %+v", out.Events)
		}
	}
	if a := r.do("GET", "/v1/operations/op-a/audit", agentToken, nil, "Accept", "application/json;q=0"); !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
		t.Error("q=0 JSON was served as JSON")
	}
	if a := r.do("GET", "/v1/operations/nope/audit", agentToken, nil); a.status != http.StatusNotFound {
		t.Errorf("unknown op: %d", a.status)
	}
}

func TestRoutingErrors(t *testing.T) {
	r := newRig(t)
	a := r.do("DELETE", "/v1/operations/x", agentToken, nil)
	if a.status != http.StatusMethodNotAllowed || a.errorCode(t) != codeMethodNotAllowed || a.header.Get("Allow") != "GET" {
		t.Errorf("DELETE: %d %s Allow=%q", a.status, a.body, a.header.Get("Allow"))
	}
	a = r.do("PUT", "/v1/operations", agentToken, nil)
	if a.status != http.StatusMethodNotAllowed || !strings.Contains(a.header.Get("Allow"), "POST") {
		t.Errorf("PUT: %d Allow=%q", a.status, a.header.Get("Allow"))
	}
	a = r.do("GET", "/v2/nothing", "", nil)
	if a.status != http.StatusNotFound || a.errorCode(t) != codeNotFound {
		t.Errorf("unknown path: %d %s", a.status, a.body)
	}
	a = r.do("GET", "/healthz", "", nil)
	if a.status != http.StatusOK || a.json(t)["status"] != "ok" {
		t.Errorf("healthz: %d %s", a.status, a.body)
	}
}

func TestMetrics(t *testing.T) {
	r := newRig(t)
	r.fp.Script("j", fp.State("running", nil))
	r.create("op-w", "j", nil)
	r.escalated("op-e", "export")
	r.do("GET", "/v1/operations/nope", agentToken, nil)
	a := r.do("GET", "/metrics", "", nil)
	if a.status != http.StatusOK {
		t.Fatalf("%d %s", a.status, a.body)
	}
	m := string(a.body)
	for _, want := range []string{
		`pollwarden_operations{phase="waiting"} 1`,
		`pollwarden_operations{phase="escalated"} 1`,
		`pollwarden_operations{phase="succeeded"} 0`,
		`pollwarden_api_requests_total{code="201",route="POST /v1/operations"} 2`,
		`pollwarden_api_requests_total{code="404",route="GET /v1/operations/{id}"} 1`,
		`pollwarden_api_request_duration_seconds_bucket{route="POST /v1/operations",le="+Inf"} 2`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(m, "nope") {
		t.Error("a raw path reached a metric label")
	}
}

// TestInternalErrorSaysNoMore: a store failure is a 500 whose detail stays
// in the log.
func TestInternalErrorSaysNoMore(t *testing.T) {
	r := newRig(t)
	r.store.Close()
	a := r.do("GET", "/v1/operations/x", agentToken, nil)
	if a.status != http.StatusInternalServerError || a.errorCode(t) != codeInternal || a.message(t) != "internal error; see the server log" {
		t.Errorf("%d %s", a.status, a.body)
	}
}
