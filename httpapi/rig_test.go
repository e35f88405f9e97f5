package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/changes"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/tokens"
)

// canary is the provider credential. The provider requires it, so it is
// live; it must never appear in any answer of the API (R27).
const canary = "sk-canary-httpapi-5e1f"

// The bearer tokens of the rig, one per role.
const (
	agentToken    = "tok-agent-0001"
	approverToken = "tok-approver-0002"
	adminToken    = "tok-admin-0003"
	unknownToken  = "tok-nobody-0004"
)

// contractFile is a contract on the fake provider with a cancel action
// (name "export") or without one ("plain"). Backoff is short so that
// operations move in milliseconds on the real clock.
func contractFile(name, base string, cancel bool) string {
	s := `version: 1
name: ` + name + `
status:
  url: "` + base + `/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:API_TOKEN"}
  timeout: 2s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed], cancelled: [cancelled], expired: [expired]}
result: {require: [{path: result.url, kind: url}], error_path: error}
not_found: {pending_for: 0s}
backoff: {base: 10ms, max: 20ms}
limits: {deadline: 10m, max_status_requests: 5, max_transport_failures: 3, max_rate_limited: 3}
escalation:
  extension: {time: 15m, status_requests: 4}
  console_url: "https://console.example.com/jobs/{job_id}"
`
	if cancel {
		s += `cancel: {url: "` + base + `/jobs/{job_id}/cancel", method: POST}` + "\n"
	} else {
		s += "callback: {verify: github, secret: env:RIG_CALLBACK_SECRET, job_id_path: workflow_run.id}\n"
	}
	return s
}

// rigCallbackSecret is the "plain" contract's callback secret.
func rigCallbackSecret(ref string) (string, error) {
	if ref != "env:RIG_CALLBACK_SECRET" {
		return "", errors.New("credential " + ref + " is not set")
	}
	return "rig-callback-secret", nil
}

type rig struct {
	t         *testing.T
	fp        *fp.Server
	store     *sqlite.Store
	ctl       *controller.Controller
	contracts *contract.Set
	changes   *changes.Feed
	srv       *httptest.Server

	// onChange, when set, sees every published change first.
	hookMu   sync.Mutex
	onChange func(op *pollwarden.Operation)

	driveCtx context.Context
	drivers  sync.WaitGroup

	seenMu sync.Mutex
	seen   []string
}

type rigOptions struct {
	recheck             time.Duration
	credentialAvailable func(*pollwarden.ContractSpec) error
	// submitter adds the contract "submitter", which has a submit block.
	submitter bool
}

func newRig(t *testing.T) *rig { return newRigWith(t, rigOptions{}) }

func newRigWith(t *testing.T, o rigOptions) *rig {
	t.Helper()
	r := &rig{t: t, changes: changes.NewFeed()}
	r.fp = fp.New()
	t.Cleanup(r.fp.Close)
	r.fp.RequireToken(canary)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.store = st
	dir := t.TempDir()
	for name, cancel := range map[string]bool{"export": true, "plain": false} {
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(contractFile(name, r.fp.URL(), cancel)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if o.submitter {
		submitter := contractFile("submitter", r.fp.URL(), false) + `submit: {url: "` + r.fp.URL() + `/jobs", job_id_path: id}` + "\n"
		if err := os.WriteFile(filepath.Join(dir, "submitter.yaml"), []byte(submitter), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r.contracts, err = contract.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) (string, bool) { return canary, k == "API_TOKEN" }
	r.ctl = controller.New(controller.Options{
		Store: st, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)), Owner: "api-test",
		Prober:   prober.New(prober.Options{Now: time.Now, Getenv: getenv}),
		OnChange: r.publish,
	})
	tokens, err := tokens.New(
		tokens.Spec{Name: "build-agent", Role: pollwarden.RoleAgent, SHA256: tokens.Hash(agentToken)},
		tokens.Spec{Name: "alice", Role: pollwarden.RoleApprover, SHA256: tokens.Hash(approverToken)},
		tokens.Spec{Name: "root", Role: pollwarden.RoleAdmin, SHA256: tokens.Hash(adminToken)},
	)
	if err != nil {
		t.Fatal(err)
	}
	ops := operations.New(operations.Options{Controller: r.ctl, Contracts: r.contracts, Changes: r.changes, Recheck: o.recheck,
		CredentialAvailable: o.credentialAvailable, CredentialHint: "where pollwarden serve runs; set it there (nothing was registered)",
		CallbackSecret: rigCallbackSecret, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	h := NewHandler(Options{Ops: ops, Tokens: tokens, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	r.srv = httptest.NewServer(h)
	t.Cleanup(r.srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	r.driveCtx = ctx
	t.Cleanup(func() {
		cancel()
		r.drivers.Wait()
		r.assertNoCanary()
	})
	return r
}

func (r *rig) publish(op *pollwarden.Operation) {
	r.hookMu.Lock()
	hook := r.onChange
	r.hookMu.Unlock()
	if hook != nil {
		hook(op)
	}
	r.changes.Publish(op)
}

func (r *rig) setHook(f func(op *pollwarden.Operation)) {
	r.hookMu.Lock()
	defer r.hookMu.Unlock()
	r.onChange = f
}

// answer is one HTTP answer as a test sees it.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %d is not a JSON object: %v\n%s", a.status, err, a.body)
	}
	return m
}

// errorCode returns error.code of an error answer.
func (a answer) errorCode(t *testing.T) string {
	t.Helper()
	e, _ := a.json(t)["error"].(map[string]any)
	if e == nil {
		t.Fatalf("answer %d has no error object:\n%s", a.status, a.body)
	}
	code, _ := e["code"].(string)
	return code
}

func (a answer) message(t *testing.T) string {
	t.Helper()
	e, _ := a.json(t)["error"].(map[string]any)
	msg, _ := e["message"].(string)
	return msg
}

// do sends one request over real HTTP. body is marshalled unless it is a
// string or []byte (sent raw). Every answer is kept for the R27 check.
func (r *rig) do(method, path, token string, body any, header ...string) answer {
	r.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			r.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, r.srv.URL+path, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := r.srv.Client().Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	r.keep(resp.Header, b)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func (r *rig) keep(h http.Header, body []byte) {
	var sb strings.Builder
	for k, vs := range h {
		sb.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
	}
	sb.Write(body)
	r.seenMu.Lock()
	r.seen = append(r.seen, sb.String())
	r.seenMu.Unlock()
}

// assertNoCanary checks R27 over every answer the test saw.
func (r *rig) assertNoCanary() {
	r.seenMu.Lock()
	defer r.seenMu.Unlock()
	for _, s := range r.seen {
		if strings.Contains(s, canary) {
			r.t.Errorf("an answer carries the provider secret (R27):\n%s", s)
		}
	}
}

// create hands job over as the agent and checks the answer is 201.
func (r *rig) create(id, job string, extra map[string]any) map[string]any {
	r.t.Helper()
	body := map[string]any{"operation_id": id, "contract": "export", "job_id": job}
	for k, v := range extra {
		body[k] = v
	}
	a := r.do("POST", "/v1/operations", agentToken, body)
	if a.status != http.StatusCreated {
		r.t.Fatalf("create %s: %d %s", id, a.status, a.body)
	}
	return a.json(r.t)
}

// drive moves id forward in the background until it is final, as the
// daemon's scheduler will.
func (r *rig) drive(id string) {
	op, err := r.store.OperationGet(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	ex, _ := r.contracts.Get(op.Contract)
	r.drivers.Go(func() { _, _ = r.ctl.Wait(r.driveCtx, ex, id, nil) })
}

// settle steps id in the foreground until it is final.
func (r *rig) settle(id string) *pollwarden.Operation {
	r.t.Helper()
	op, err := r.store.OperationGet(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	ex, _ := r.contracts.Get(op.Contract)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	op, err = r.ctl.Wait(ctx, ex, id, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	return op
}

// escalated creates an operation on a job that stays running with a budget
// of one request, and steps it until it escalates.
func (r *rig) escalated(id, contractName string) *pollwarden.Operation {
	r.t.Helper()
	job := "job-" + id
	r.fp.Script(job, fp.State("running", nil))
	a := r.do("POST", "/v1/operations", agentToken, map[string]any{
		"operation_id": id, "contract": contractName, "job_id": job, "max_status_requests": 1})
	if a.status != http.StatusCreated {
		r.t.Fatalf("create %s: %d %s", id, a.status, a.body)
	}
	op := r.settle(id)
	if op.Phase != pollwarden.PhaseEscalated {
		r.t.Fatalf("%s: phase %s, want escalated", id, op.Phase)
	}
	return op
}

func (r *rig) stored(id string) *pollwarden.Operation {
	r.t.Helper()
	op, err := r.store.OperationGet(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return op
}

func (r *rig) count() int {
	r.t.Helper()
	ops, err := r.store.OperationList(context.Background(), pollwarden.ListParams{})
	if err != nil {
		r.t.Fatal(err)
	}
	return len(ops)
}
