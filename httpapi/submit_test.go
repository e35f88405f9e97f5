package httpapi

import (
	"net/http"
	"strings"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestCreateWithSubmit: POST /v1/operations with "submit" makes
// pollwarden submit the job with its own credential; the same body again
// answers the stored record and submits nothing.
func TestCreateWithSubmit(t *testing.T) {
	r := newRigWith(t, rigOptions{submitter: true})
	r.fp.Script("sub-1", fp.State("running", nil))
	body := map[string]any{"operation_id": "op-sub", "contract": "submitter", "submit": map[string]any{"body": map[string]any{"report": "q3"}}}
	first := r.do("POST", "/v1/operations", agentToken, body)
	if first.status != http.StatusCreated {
		t.Fatalf("create: %d %s", first.status, first.body)
	}
	if rec := first.json(t); rec["provider_job_id"] != "sub-1" || rec["phase"] != "waiting" {
		t.Fatalf("record %s", first.body)
	}
	again := r.do("POST", "/v1/operations", agentToken, body)
	if again.status != http.StatusOK || r.fp.Submits() != 1 {
		t.Fatalf("same body again: %d, %d submissions", again.status, r.fp.Submits())
	}
	for _, tc := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"contract": "plain", "submit": map[string]any{"body": map[string]any{}}}, "has no submit block"},
		{map[string]any{"contract": "submitter", "job_id": "j", "submit": map[string]any{"body": map[string]any{}}}, "submit replaces job_id"},
		{map[string]any{"contract": "submitter", "submit": map[string]any{}}, "submit.body is required"},
	} {
		a := r.do("POST", "/v1/operations", agentToken, tc.body)
		if a.status != http.StatusUnprocessableEntity || !strings.Contains(a.message(t), tc.want) {
			t.Errorf("%v: %d %s", tc.body, a.status, a.body)
		}
	}
	if r.fp.Submits() != 1 {
		t.Fatalf("%d submissions", r.fp.Submits())
	}
}
