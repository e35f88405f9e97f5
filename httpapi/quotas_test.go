package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pollwarden/pollwarden/operations"
)

// TestCreatePriority: over the API an agent may give its operation 5 to 9
// and is refused a more urgent one (403, naming the priority); an
// approver may give any; out of range is 422 and not a number 400, each
// naming the field; the record shows the priority, 5 when none was given.
func TestCreatePriority(t *testing.T) {
	r := newRig(t)
	for _, c := range []struct {
		token  string
		id     string
		prio   any
		status int
		want   float64
	}{
		{agentToken, "p-none", nil, http.StatusCreated, 5},
		{agentToken, "p-low", 8, http.StatusCreated, 8},
		{agentToken, "p-urgent-agent", 2, http.StatusForbidden, 0},
		{approverToken, "p-urgent", 1, http.StatusCreated, 1},
		{agentToken, "p-zero", 0, http.StatusUnprocessableEntity, 0},
		{agentToken, "p-ten", 10, http.StatusUnprocessableEntity, 0},
		{agentToken, "p-text", "x", http.StatusBadRequest, 0},
	} {
		body := map[string]any{"operation_id": c.id, "contract": "export", "job_id": c.id}
		if c.prio != nil {
			body["priority"] = c.prio
		}
		a := r.do("POST", "/v1/operations", c.token, body)
		if a.status != c.status {
			t.Errorf("%s: %d, want %d: %s", c.id, a.status, c.status, a.body)
			continue
		}
		if c.status != http.StatusCreated {
			if !strings.Contains(a.message(t), "priority") {
				t.Errorf("%s: %q does not name the priority", c.id, a.message(t))
			}
			continue
		}
		if got := r.do("GET", "/v1/operations/"+c.id, agentToken, nil).json(t)["priority"]; c.token == agentToken && got != c.want {
			t.Errorf("%s: priority %v, want %v", c.id, got, c.want)
		}
		if got := a.json(t)["priority"]; got != c.want {
			t.Errorf("%s: answered priority %v, want %v", c.id, got, c.want)
		}
	}
}

// TestQuotasForApprovers: GET /v1/quotas is an approver's (an agent's
// token answers 403 before anything is read) and answers a list, empty
// before any key was used.
func TestQuotasForApprovers(t *testing.T) {
	r := newRig(t)
	if a := r.do("GET", "/v1/quotas", agentToken, nil); a.status != http.StatusForbidden {
		t.Errorf("agent: %d %s, want 403", a.status, a.body)
	}
	a := r.do("GET", "/v1/quotas", approverToken, nil)
	if a.status != http.StatusOK || !strings.Contains(string(a.body), `"quotas"`) {
		t.Errorf("approver: %d %s", a.status, a.body)
	}
}

// TestQuotaGaugesLint: the quota gauges pass Prometheus' own lint (names,
// help, units) as collected from a store.
func TestQuotaGaugesLint(t *testing.T) {
	r := newRig(t)
	ops := operations.New(operations.Options{Controller: r.ctl, Contracts: r.contracts})
	problems, err := testutil.CollectAndLint(newQuotaCollector(ops))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	if n := testutil.CollectAndCount(newQuotaCollector(ops), "pollwarden_quota_keys"); n != 1 {
		t.Errorf("pollwarden_quota_keys: %d series, want 1", n)
	}
}
