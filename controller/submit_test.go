package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// submitRig is a loopback provider whose submission endpoint answers
// from a script, with a controller over a real SQLite store.
type submitRig struct {
	t      *testing.T
	srv    *httptest.Server
	store  *sqlite.Store
	ex     *contract.Loaded
	ctl    *Controller
	mu     sync.Mutex
	keys   []string
	script []func(w http.ResponseWriter, r *http.Request)
	// seen is what the store said about the submission when each one
	// arrived: the record must say "sent" before the request leaves.
	seen []string
}

func newSubmitRig(t *testing.T, tls bool, submitExtra string) *submitRig {
	r := &submitRig{t: t}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer "+testToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if req.Method != http.MethodPost {
			fmt.Fprint(w, `{"state":"running"}`)
			return
		}
		r.mu.Lock()
		r.keys = append(r.keys, req.Header.Get("Idempotency-Key"))
		if op, err := r.store.OperationGet(context.Background(), "op-s"); err == nil && op.Submission != nil {
			r.seen = append(r.seen, fmt.Sprintf("%s %d", op.Submission.State, op.Submission.Attempts))
		}
		next := r.script[0]
		if len(r.script) > 1 {
			r.script = r.script[1:]
		}
		r.mu.Unlock()
		next(w, req)
	})
	if tls {
		r.srv = httptest.NewTLSServer(h)
	} else {
		r.srv = httptest.NewServer(h)
	}
	t.Cleanup(r.srv.Close)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.store = st
	y := contractYAML(r.srv.URL, "submit: {url: \"BASE/v1/jobs\", job_id_path: id, status_location: \"header:Operation-Location\""+submitExtra+"}\n")
	c, err := contract.Parse([]byte(strings.Replace(y, "BACKOFF_BASE", "1s", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if r.ex, err = contract.Compile(c); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Date(2025, 4, 18, 10, 20, 0, 0, time.UTC)}
	getenv := func(k string) (string, bool) { return testToken, k == "CTL_TOKEN" }
	r.ctl = New(Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)), Owner: "a",
		Prober: prober.New(prober.Options{Now: clock.Now, Getenv: getenv, Transport: r.srv.Client().Transport})})
	return r
}

func answer(code int, loc, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		if loc != "" {
			w.Header().Set("Operation-Location", loc)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	}
}

func (r *submitRig) run() *pollwarden.Operation {
	r.t.Helper()
	op, err := r.ctl.SubmitJob(context.Background(), r.ex, policy.NewParams{ID: "op-s"}, []byte(`{"report":"q3"}`))
	if err != nil {
		r.t.Fatal(err)
	}
	return op
}

// TestSubmitJobRecordedBeforeSend: a record left as the crash before
// the send leaves it (recorded, nothing sent) is sent exactly once on
// resume, and the provider's request arrives when the store already says
// the attempt is sent.
func TestSubmitJobRecordedBeforeSend(t *testing.T) {
	r := newSubmitRig(t, false, "")
	r.script = []func(http.ResponseWriter, *http.Request){answer(202, r.srv.URL+"/jobs/j1", `{"id":"j1"}`)}
	fresh, events, err := policy.NewSubmission(r.ex.Spec(), policy.NewParams{ID: "op-s"}, []byte(`{"report":"q3"}`), "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.store.OperationCreate(context.Background(), fresh, events); err != nil {
		t.Fatal(err)
	}
	op := r.run()
	if op.Phase != pollwarden.PhaseWaiting || op.ProviderJobID != "j1" || op.StatusURL != r.srv.URL+"/jobs/j1" {
		t.Fatalf("after submission: phase %s job %q status %q", op.Phase, op.ProviderJobID, op.StatusURL)
	}
	again := r.run()
	if len(r.keys) != 1 || r.seen[0] != "sent 1" || again.Version != op.Version {
		t.Fatalf("%d submissions (store said %v), rerun changed the record: %v", len(r.keys), r.seen, again.Version != op.Version)
	}
}

// TestSubmitJobOutcomes: every way a submission ends.
func TestSubmitJobOutcomes(t *testing.T) {
	key := ", idempotency_key_header: Idempotency-Key"
	for _, tc := range []struct {
		name, extra string
		script      []int
		phase       pollwarden.Phase
		reason      pollwarden.Reason
		posts       int
		resubmit    bool
	}{
		{"refused 400", "", []int{400}, pollwarden.PhaseFailed, "", 1, false},
		{"denied 401", "", []int{401}, pollwarden.PhaseEscalated, pollwarden.ReasonAuthorizationDenied, 1, true},
		{"503 without key", "", []int{503}, pollwarden.PhaseEscalated, pollwarden.ReasonIntegrationFailure, 1, true},
		{"429 without key", "", []int{429}, pollwarden.PhaseEscalated, pollwarden.ReasonIntegrationFailure, 1, true},
		{"503 with key, budget used", key, []int{503, 502, 500}, pollwarden.PhaseEscalated, pollwarden.ReasonIntegrationFailure, 3, true},
		{"503 then 202 with key", key, []int{503, 202}, pollwarden.PhaseWaiting, "", 2, false},
		{"202 without job id", "", []int{-202}, pollwarden.PhaseEscalated, pollwarden.ReasonIntegrationFailure, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSubmitRig(t, false, tc.extra)
			for _, code := range tc.script {
				switch {
				case code == -202:
					r.script = append(r.script, answer(202, r.srv.URL+"/jobs/j1", `{}`))
				case code == 202:
					r.script = append(r.script, answer(202, r.srv.URL+"/jobs/j1", `{"id":"j1"}`))
				default:
					r.script = append(r.script, answer(code, "", `{"error":{"message":"no such report"}}`))
				}
			}
			op := r.run()
			if op.Phase != tc.phase || op.Reason != tc.reason || len(r.keys) != tc.posts {
				t.Fatalf("phase %s reason %q after %d submissions; want %s %q after %d", op.Phase, op.Reason, len(r.keys), tc.phase, tc.reason, tc.posts)
			}
			for _, k := range r.keys {
				if k != r.keys[0] || (tc.extra != "") != (k != "") {
					t.Fatalf("keys sent %q", r.keys)
				}
			}
			if tc.name == "refused 400" && !strings.Contains(string(op.ProviderError), "no such report") {
				t.Fatalf("provider error not kept: %s", op.ProviderError)
			}
			offered := false
			if op.Escalation != nil {
				for _, o := range op.Escalation.Options {
					offered = offered || (o.ID == pollwarden.OptionResubmit && o.GrantsAuthority)
				}
			}
			if offered != tc.resubmit {
				t.Fatalf("resubmit offered %v, want %v (%+v)", offered, tc.resubmit, op.Escalation)
			}
			if tc.reason == pollwarden.ReasonIntegrationFailure && tc.resubmit && !strings.Contains(op.Escalation.Message, policy.SubmitQuestion) {
				t.Fatalf("message %q lacks the question", op.Escalation.Message)
			}
		})
	}
}

// TestSubmitJobPlainHTTPLocationRefused: a 202 pointing an https
// contract's status at plain http on the same host and port is refused
// and nothing is sent there.
func TestSubmitJobPlainHTTPLocationRefused(t *testing.T) {
	r := newSubmitRig(t, true, "")
	plain := strings.Replace(r.srv.URL, "https://", "http://", 1) + "/jobs/j1"
	r.script = []func(http.ResponseWriter, *http.Request){answer(202, plain, `{"id":"j1"}`)}
	op := r.run()
	if op.Phase != pollwarden.PhaseEscalated || op.Reason != pollwarden.ReasonIntegrationFailure ||
		!strings.Contains(op.Escalation.Message, "plain http") || op.StatusURL != "" {
		t.Fatalf("phase %s reason %s status %q message %v", op.Phase, op.Reason, op.StatusURL, op.Escalation)
	}
	if _, err := r.ctl.Wait(context.Background(), r.ex, op.ID, nil); err != nil {
		t.Fatal(err)
	}
	if len(r.keys) != 1 {
		t.Fatalf("%d submissions", len(r.keys))
	}
}

// TestSubmitJobResubmitIsTheApprovers: after an unknown fate, an agent
// may not resubmit; an approver's resubmit sends once more.
func TestSubmitJobResubmitIsTheApprovers(t *testing.T) {
	r := newSubmitRig(t, false, "")
	r.script = []func(http.ResponseWriter, *http.Request){answer(503, "", `{}`), answer(202, r.srv.URL+"/jobs/j1", `{"id":"j1"}`)}
	if op := r.run(); op.Phase != pollwarden.PhaseEscalated {
		t.Fatalf("phase %s", op.Phase)
	}
	ctx := context.Background()
	_, err := r.ctl.Decide(ctx, r.ex, "op-s", policy.DecisionParams{Option: pollwarden.OptionResubmit, Actor: pollwarden.Actor{Name: "bot", Role: pollwarden.RoleAgent}})
	if err == nil || len(r.keys) != 1 {
		t.Fatalf("agent's resubmit: %v, %d submissions", err, len(r.keys))
	}
	op, err := r.ctl.Decide(ctx, r.ex, "op-s", policy.DecisionParams{Option: pollwarden.OptionResubmit, Actor: pollwarden.Actor{Name: "ann", Role: pollwarden.RoleApprover}})
	if err != nil || op.Phase != pollwarden.PhaseWaiting || op.ProviderJobID != "j1" || len(r.keys) != 2 {
		t.Fatalf("approver's resubmit: %v, phase %s job %q, %d submissions", err, op.Phase, op.ProviderJobID, len(r.keys))
	}
	if again := r.run(); again.Version != op.Version || len(r.keys) != 2 {
		t.Fatalf("a rerun after the resubmission sent again")
	}
}

// TestSubmitJobProviderNotReached: a refused connection cannot have
// created the job: the attempt is not counted and the escalation says
// the provider was not reached, not that it may have the job.
func TestSubmitJobProviderNotReached(t *testing.T) {
	r := newSubmitRig(t, false, "")
	r.srv.Close()
	op := r.run()
	if op.Phase != pollwarden.PhaseEscalated || op.Submission.Attempts != 0 ||
		strings.Contains(op.Escalation.Message, policy.SubmitQuestion) || !strings.Contains(op.Escalation.Message, "not reached") {
		t.Fatalf("phase %s attempts %d message %q", op.Phase, op.Submission.Attempts, op.Escalation.Message)
	}
}
