package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

func TestCreateIdempotent(t *testing.T) {
	r := newRig(t)
	r.fp.Script("j1", fp.State("running", nil))
	body := map[string]any{"operation_id": "op-1", "contract": "export", "job_id": "j1", "deadline": "5m", "max_status_requests": 3}

	first := r.do("POST", "/v1/operations", agentToken, body)
	if first.status != http.StatusCreated {
		t.Fatalf("first create: %d %s", first.status, first.body)
	}
	if loc := first.header.Get("Location"); loc != "/v1/operations/op-1" {
		t.Errorf("Location %q", loc)
	}
	rec := first.json(t)
	if rec["phase"] != "waiting" || rec["operation_id"] != "op-1" || rec["max_status_requests"] != 3.0 || rec["outcome"] != nil {
		t.Errorf("created record: %s", first.body)
	}
	if rec["credential_name"] != "env:API_TOKEN" {
		t.Errorf("credential_name %v, want the reference by name", rec["credential_name"])
	}

	// The same body again, even after the operation moved on: 200, the
	// stored record, counters intact.
	r.settle1(t, "op-1")
	again := r.do("POST", "/v1/operations", agentToken, body)
	if again.status != http.StatusOK {
		t.Fatalf("same body: %d %s", again.status, again.body)
	}
	if got := again.json(t)["status_requests_used"]; got != 1.0 {
		t.Errorf("retry answered status_requests_used %v, want the stored 1", got)
	}

	for name, change := range map[string]map[string]any{
		"other job":      {"job_id": "j2"},
		"other limit":    {"max_status_requests": 2},
		"other deadline": {"deadline": "4m"},
		"limit dropped":  {"max_status_requests": nil},
	} {
		b := map[string]any{}
		for k, v := range body {
			b[k] = v
		}
		for k, v := range change {
			if v == nil {
				delete(b, k)
			} else {
				b[k] = v
			}
		}
		a := r.do("POST", "/v1/operations", agentToken, b)
		if a.status != http.StatusConflict || a.errorCode(t) != codeConflict {
			t.Errorf("%s: %d %s, want 409", name, a.status, a.body)
		}
	}
	if op := r.stored("op-1"); op.MaxStatusRequests != 3 || op.ProviderJobID != "j1" {
		t.Errorf("a refused create changed the record: %+v", op)
	}

	if a := r.do("POST", "/v1/operations", agentToken, map[string]any{"operation_id": "op-2", "contract": "export", "job_id": "j1"}); a.status != http.StatusCreated {
		t.Errorf("new id: %d %s", a.status, a.body)
	}
}

// settle1 takes one step of id, so that its counters move.
func (r *rig) settle1(t *testing.T, id string) {
	t.Helper()
	ex, _ := r.contracts.Get(r.stored(id).Contract)
	if _, err := r.ctl.Step(context.Background(), ex, id); err != nil {
		t.Fatal(err)
	}
}

// TestCreateDerivesID: without an operation_id the id is derived from
// the contract, the job, the credential's name and the token, so that an
// agent retrying after a lost answer resumes its operation instead of
// starting a second one on the same job; another token gets its own.
func TestCreateDerivesID(t *testing.T) {
	r := newRig(t)
	body := map[string]any{"contract": "export", "job_id": "j"}
	first := r.do("POST", "/v1/operations", agentToken, body)
	if first.status != http.StatusCreated {
		t.Fatalf("%d %s", first.status, first.body)
	}
	id, _ := first.json(t)["operation_id"].(string)
	if !regexp.MustCompile(`^export-[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("derived id %q", id)
	}
	again := r.do("POST", "/v1/operations", agentToken, body)
	if again.status != http.StatusOK || again.json(t)["operation_id"] != id {
		t.Errorf("retry: %d %s, want 200 with %s", again.status, again.body, id)
	}
	other := r.do("POST", "/v1/operations", approverToken, body)
	if other.status != http.StatusCreated || other.json(t)["operation_id"] == id {
		t.Errorf("another token: %d %s, want its own operation", other.status, other.body)
	}
	list, err := r.store.OperationList(context.Background(), pollwarden.ListParams{})
	if err != nil || len(list) != 2 {
		t.Errorf("%d operations stored (%v), want 2", len(list), err)
	}
}

func TestCreateDeadline(t *testing.T) {
	r := newRig(t)
	before := time.Now()
	a := r.do("POST", "/v1/operations", agentToken, map[string]any{"operation_id": "op-d", "contract": "export", "job_id": "j", "deadline": "5m"})
	if a.status != http.StatusCreated {
		t.Fatalf("%d %s", a.status, a.body)
	}
	dl := r.stored("op-d").DeadlineAt
	if dl.Before(before.Add(5*time.Minute)) || dl.After(time.Now().Add(5*time.Minute)) {
		t.Errorf("deadline %s, want 5 minutes from the request", dl)
	}
	at := time.Now().Add(3 * time.Minute).UTC().Truncate(time.Second)
	a = r.do("POST", "/v1/operations", agentToken, map[string]any{"operation_id": "op-d2", "contract": "export", "job_id": "j", "deadline": at.Format(time.RFC3339)})
	if a.status != http.StatusCreated || !r.stored("op-d2").DeadlineAt.Equal(at) {
		t.Errorf("RFC 3339 deadline: %d %s", a.status, a.body)
	}
}

// TestCreateRefused: every refusal is 422 naming the problem, and nothing
// is stored.
func TestCreateRefused(t *testing.T) {
	r := newRig(t)
	for name, tc := range map[string]struct {
		body map[string]any
		want string
	}{
		"limit above contract":    {map[string]any{"max_status_requests": 6}, "max status requests 6 is above the contract's 5"},
		"failures above contract": {map[string]any{"max_transport_failures": 9}, "max transport failures 9 is above the contract's 3"},
		"deadline above contract": {map[string]any{"deadline": "11m"}, "later than the contract's 10m"},
		"unknown contract":        {map[string]any{"contract": "nope"}, `unknown contract "nope" (loaded: export, plain; built-in: anthropic-message-batch, `},
		"status_url off host": {map[string]any{"job_id": nil, "status_url": "https://evil.example.com/jobs/1"},
			`status_url: https://evil.example.com is not an allowed origin of contract export`},
		"status_url with userinfo": {map[string]any{"job_id": nil, "status_url": "http://u:p@127.0.0.1/jobs/1"}, "user credentials"},
		"job id breaks template":   {map[string]any{"job_id": ".."}, `job_id: value ".." for {job_id} would change the URL's path`},
		"both job and url":         {map[string]any{"status_url": "http://127.0.0.1/jobs/1"}, "exactly one of job_id and status_url"},
		"neither job nor url":      {map[string]any{"job_id": nil}, "exactly one of job_id and status_url"},
		"zero limit":               {map[string]any{"max_status_requests": 0}, "max_status_requests must be at least 1"},
		"negative deadline":        {map[string]any{"deadline": "-5m"}, "must be positive"},
		"past deadline":            {map[string]any{"deadline": "2001-01-01T00:00:00Z"}, "not in the future"},
		"garbage deadline":         {map[string]any{"deadline": "soon"}, "neither a duration"},
		"bad operation id":         {map[string]any{"operation_id": "a/b"}, "operation_id"},
		"no contract":              {map[string]any{"contract": nil}, "contract is required"},
		"built-in found by name":   {map[string]any{"contract": "openai-batch", "job_id": ".."}, `job_id: value ".." for {job_id} would change the URL's path`},
		"undeclared variable":      {map[string]any{"vars": map[string]string{"owner": "acme"}}, `vars: variable "owner": contract export declares no variables`},
	} {
		t.Run(name, func(t *testing.T) {
			body := map[string]any{"operation_id": "op-refused", "contract": "export", "job_id": "j"}
			for k, v := range tc.body {
				if v == nil {
					delete(body, k)
				} else {
					body[k] = v
				}
			}
			a := r.do("POST", "/v1/operations", agentToken, body)
			if a.status != http.StatusUnprocessableEntity || a.errorCode(t) != codeUnprocessable {
				t.Fatalf("%d %s, want 422", a.status, a.body)
			}
			if msg := a.message(t); !strings.Contains(msg, tc.want) {
				t.Errorf("message %q lacks %q", msg, tc.want)
			}
		})
	}
	a := r.do("POST", "/v1/operations", agentToken, map[string]any{"contract": "export", "job_id": "..", "max_status_requests": 9, "deadline": "1h"})
	for _, want := range []string{"job_id: ", "max status requests 9", "later than the contract's 10m"} {
		if !strings.Contains(a.message(t), want) {
			t.Errorf("several problems: %q lacks %q", a.message(t), want)
		}
	}
	if n := r.count(); n != 0 {
		t.Errorf("%d operations stored by refused requests", n)
	}
}

// TestApproverMayRaise: limits above the contract's are an approver's to
// grant (R20).
func TestApproverMayRaise(t *testing.T) {
	r := newRig(t)
	for _, tok := range []string{approverToken, adminToken} {
		id := "op-raise-" + tok
		a := r.do("POST", "/v1/operations", tok, map[string]any{"operation_id": id, "contract": "export", "job_id": "j",
			"max_status_requests": 50, "max_transport_failures": 9, "deadline": "2h"})
		if a.status != http.StatusCreated {
			t.Fatalf("%s: %d %s", tok, a.status, a.body)
		}
		if op := r.stored(id); op.MaxStatusRequests != 50 || op.MaxTransportFailures != 9 || time.Until(op.DeadlineAt) < time.Hour {
			t.Errorf("%s: limits %d/%d deadline %s", tok, op.MaxStatusRequests, op.MaxTransportFailures, op.DeadlineAt)
		}
	}
}

func TestBadBodies(t *testing.T) {
	r := newRig(t)
	r.escalated("op-esc", "export")
	n := r.count()
	wrongType := map[string]string{
		"/v1/operations": `{"contract": 7}`,
		"/v1/operations/op-esc/extension-requests": `{"extra_status_requests": "2"}`,
		"/v1/operations/op-esc/decisions":          `{"option": 7}`,
		"/v1/operations/op-esc/cancel":             `{"note": 7}`,
	}
	for path := range wrongType {
		for name, tc := range map[string]struct {
			body   any
			status int
			code   string
		}{
			"malformed":     {`{"contract": "export",`, 400, codeInvalidJSON},
			"not an object": {`[1, 2]`, 400, codeInvalidJSON},
			"two values":    {`{} {}`, 400, codeInvalidJSON},
			"unknown field": {`{"colour": "blue"}`, 400, codeUnknownField},
			"wrong type":    {wrongType[path], 400, codeInvalidJSON},
			"too large":     {`{"note": "` + strings.Repeat("x", maxBody) + `"}`, 413, codeTooLarge},
		} {
			a := r.do("POST", path, adminToken, tc.body)
			if a.status != tc.status || a.errorCode(t) != tc.code {
				t.Errorf("%s %s: %d %s, want %d %s", path, name, a.status, a.body, tc.status, tc.code)
			}
		}
	}
	if a := r.do("POST", "/v1/operations", adminToken, ""); a.status != 400 {
		t.Errorf("empty create body: %d", a.status)
	}
	if r.count() != n || r.stored("op-esc").Phase != pollwarden.PhaseEscalated {
		t.Error("a refused body changed the store")
	}
	if evs, _ := r.store.EventList(context.Background(), "op-esc"); evs[len(evs)-1].Kind != pollwarden.EventEscalated {
		t.Errorf("a refused body added event %s", evs[len(evs)-1].Kind)
	}
}

// TestTooLargeChunked: the 64 KiB bound holds without a Content-Length.
func TestTooLargeChunked(t *testing.T) {
	r := newRig(t)
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(`{"contract": "export", "job_id": "` + strings.Repeat("x", 2*maxBody) + `"}`))
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", r.srv.URL+"/v1/operations", pr)
	req.Header.Set("Authorization", "Bearer "+agentToken)
	resp, err := r.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked oversize body: %d", resp.StatusCode)
	}
	if _, err := r.store.OperationGet(context.Background(), "x"); !errors.Is(err, pollwarden.ErrNotFound) || r.count() != 0 {
		t.Error("stored something")
	}
}

// TestCreateRefusedWithoutCredential: a daemon that cannot find a
// contract's credential says so at create time (422, naming the reference,
// never a value) and registers nothing, instead of escalating
// integration_failure after a first step that could not be sent.
func TestCreateRefusedWithoutCredential(t *testing.T) {
	r := newRigWith(t, rigOptions{credentialAvailable: func(c *pollwarden.ContractSpec) error {
		if c.Name == "plain" {
			return errors.New("credential env:API_TOKEN is not set")
		}
		return nil
	}})
	a := r.do("POST", "/v1/operations", agentToken, map[string]any{"operation_id": "op-nocred", "contract": "plain", "job_id": "j"})
	if a.status != http.StatusUnprocessableEntity || a.errorCode(t) != codeUnprocessable {
		t.Fatalf("%d %s, want 422", a.status, a.body)
	}
	if msg := a.message(t); !strings.Contains(msg, "contract plain: credential env:API_TOKEN is not set") {
		t.Errorf("message %q does not name the contract and the reference", msg)
	}
	if n := r.count(); n != 0 {
		t.Errorf("%d operations stored by a refused create", n)
	}
	// The check is per contract: one with its credential is registered.
	if a := r.do("POST", "/v1/operations", agentToken, map[string]any{"operation_id": "op-cred", "contract": "export", "job_id": "j"}); a.status != http.StatusCreated {
		t.Fatalf("contract with its credential: %d %s, want 201", a.status, a.body)
	}
}
