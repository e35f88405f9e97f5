package operations_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/prober"
)

// TestWriteRefusalKeepsKindAndWords: a rule's refusal under the save
// (the controller's "nothing to extend" on a finished operation, an
// ErrPhase) reaches the door as Problems of kind Conflict carrying the
// rule's words as they are, without the sentinel's name.
func TestWriteRefusalKeepsKindAndWords(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	agent := token("agent", pollwarden.RoleAgent, "")
	if _, _, err := w.ops.Create(ctx, operations.CreateParams{Caller: agent,
		CreateRequest: operations.CreateRequest{OperationID: "op-d", Contract: "export", JobID: "run"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ops.Abandon(ctx, operations.DecisionParams{Caller: agent, ID: "op-d"}); err != nil {
		t.Fatal(err)
	}
	_, _, err := w.ops.RequestExtension(ctx, operations.ExtensionParams{Caller: agent, ID: "op-d", ExtraTime: "5m", Justification: "more"})
	p, ok := operations.AsProblems(err)
	if !ok || p.Kind != operations.Conflict || len(p.List) != 1 ||
		p.List[0].Message != "operation op-d is failed; there is nothing to extend" {
		t.Fatalf("an extension of a finished operation: %#v", err)
	}
}

// TestSubmitTakenBetweenReadAndWrite: a submission whose id another
// request stored after this create read it free is judged by the one
// matcher in operations, on what the store holds: another body is a
// Conflict in the matcher's words (not an ErrInvalid of the controller's
// own check), the same body resumes; nothing is sent twice.
func TestSubmitTakenBetweenReadAndWrite(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			posts.Add(1)
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"id":"j1"}`)
			return
		}
		fmt.Fprint(w, `{"state":"running"}`)
	}))
	t.Cleanup(srv.Close)
	w := newWorld(t)
	dir := t.TempDir()
	yaml := `version: 1
name: export-submit
base_url: ` + srv.URL + `
status: {url: "/jobs/{job_id}", timeout: 2s}
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
submit: {url: "/jobs", job_id_path: id}
limits: {deadline: 10m, max_status_requests: 5, max_transport_failures: 3, max_rate_limited: 3}
`
	if err := os.WriteFile(filepath.Join(dir, "export-submit.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := contract.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	rs := &readsStore{Store: w.store}
	ctl := controller.New(controller.Options{Store: rs, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: time.Now})})
	ops := operations.New(operations.Options{Controller: ctl, Contracts: set})
	ctx := context.Background()
	agent := token("agent", pollwarden.RoleAgent, "")
	submit := func(body string) (*pollwarden.Operation, bool, error) {
		return ops.Create(ctx, operations.CreateParams{Caller: agent, CreateRequest: operations.CreateRequest{
			OperationID: "op-s", Contract: "export-submit", Submit: &operations.SubmitParams{Body: json.RawMessage(body)}}})
	}
	if _, created, err := submit(`{"report":"q3"}`); err != nil || !created {
		t.Fatalf("first submission: created %v, %v", created, err)
	}
	rs.hide.Store(true)
	_, _, err = submit(`{"report":"q4"}`)
	p, ok := operations.AsProblems(err)
	if !ok || p.Kind != operations.Conflict || !strings.Contains(err.Error(), "cannot be resumed with this request: it was created for another submission") {
		t.Fatalf("another body under an id taken meanwhile: %v, want the matcher's Conflict", err)
	}
	if errors.Is(err, pollwarden.ErrInvalid) {
		t.Fatalf("the refusal is the controller's ErrInvalid: %v", err)
	}
	rs.hide.Store(true)
	op, created, err := submit(`{"report":"q3"}`)
	if err != nil || created || op.ProviderJobID != "j1" {
		t.Fatalf("the same body under an id taken meanwhile: %+v created %v, %v; want the stored one resumed", op, created, err)
	}
	if n := posts.Load(); n != 1 {
		t.Fatalf("%d submissions sent, want 1", n)
	}
}
