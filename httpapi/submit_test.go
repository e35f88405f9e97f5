package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/policy"

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

// TestCreateWithSubmitResumesAnUnansweredSubmission: a submission the
// daemon recorded as sent but never saw answered is driven on by the
// same request, and without an idempotency key nothing is sent again.
func TestCreateWithSubmitResumesAnUnansweredSubmission(t *testing.T) {
	r := newRigWith(t, rigOptions{submitter: true})
	ex, _ := r.contracts.Get("submitter")
	body := []byte(`{"report":"q3"}`)
	req := operations.CreateRequest{Contract: "submitter", Submit: &operations.SubmitParams{Body: body}}
	op, events, err := policy.NewSubmission(ex.Spec(), policy.NewParams{ID: "op-stuck", Owner: "build-agent", RequestDigest: req.Digest()}, body, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	op.Submission.State, op.Submission.Attempts = pollwarden.SubmissionSent, 1
	if err := r.store.OperationCreate(context.Background(), op, events); err != nil {
		t.Fatal(err)
	}
	a := r.do("POST", "/v1/operations", agentToken, map[string]any{"operation_id": "op-stuck", "contract": "submitter", "submit": map[string]any{"body": map[string]any{"report": "q3"}}})
	rec := a.json(t)
	if a.status != http.StatusOK || rec["phase"] != "escalated" || rec["reason"] != "integration_failure" || r.fp.Submits() != 0 {
		t.Fatalf("%d %s; %d submissions", a.status, a.body, r.fp.Submits())
	}
}

// TestCreateWithDeepSubmitBody: a submission body nested 9,000 deep (JSON
// the decoder accepts, far deeper than the store's JSON functions read)
// is refused as 422 naming submit.body, with nothing stored or submitted;
// one at the bound is accepted.
func TestCreateWithDeepSubmitBody(t *testing.T) {
	r := newRigWith(t, rigOptions{submitter: true})
	r.fp.Script("sub-1", fp.State("running", nil))
	deep := func(n int) string {
		return `{"operation_id":"op-deep-` + fmt.Sprint(n) + `","contract":"submitter","submit":{"body":` + strings.Repeat(`[`, n) + strings.Repeat(`]`, n) + `}}`
	}
	a := r.do("POST", "/v1/operations", agentToken, deep(9000))
	if a.status != http.StatusUnprocessableEntity || !strings.Contains(a.message(t), "submit.body") || !strings.Contains(a.message(t), "deep") {
		t.Fatalf("9,000 deep: %d %s", a.status, a.body)
	}
	if g := r.do("GET", "/v1/operations/op-deep-9000", agentToken, nil); g.status != http.StatusNotFound || r.fp.Submits() != 0 {
		t.Fatalf("a refused body left a record (%d) or a submission (%d)", g.status, r.fp.Submits())
	}
	if a := r.do("POST", "/v1/operations", agentToken, deep(64)); a.status != http.StatusCreated {
		t.Fatalf("64 deep: %d %s", a.status, a.body)
	}
}
