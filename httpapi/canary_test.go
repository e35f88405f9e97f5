package httpapi

import (
	"strings"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestNoSecretInAnyAnswer (R27): the provider credential is live (the
// provider requires it) and the provider even echoes it back in a failure
// body and a header; no answer of any route, success or error, carries it.
// The rig checks every answer of every test the same way on cleanup; this
// test makes sure every route is among them. (A value the caller sends
// itself may be quoted back in an error message; it is the caller's, not
// a secret the server holds, so the canary is never sent as input here.)
func TestNoSecretInAnyAnswer(t *testing.T) {
	r := newRig(t)
	r.fp.Script("echo", fp.Step{Status: 200, Header: map[string]string{"X-Echo": canary},
		JSON: map[string]any{"state": "failed", "error": map[string]any{"message": "bad token " + canary}}})
	r.create("op-echo", "echo", nil)
	if op := r.settle("op-echo"); strings.Contains(string(op.ProviderError), canary) || !strings.Contains(string(op.ProviderError), "[REDACTED]") {
		t.Fatalf("provider error %s: want the echoed secret redacted", op.ProviderError)
	}
	r.escalated("op-esc", "export")
	r.escalated("op-esc2", "export")
	r.fp.Script("run", fp.State("running", nil))
	r.create("op-run", "run", nil)

	ids := []string{"op-echo", "op-esc", "op-run", "nope"}
	bodies := map[string][]any{
		"POST /v1/operations": {
			map[string]any{"operation_id": "op-echo", "contract": "export", "job_id": "echo"},
			map[string]any{"operation_id": "op-echo", "contract": "export", "job_id": "other"},
			map[string]any{"contract": "export", "status_url": "https://evil.example.com/x"},
			`{"contract": "export", "job_id": "j", "colour": 1}`,
		},
		"POST /v1/operations/{id}/extension-requests": {
			map[string]any{"extra_time": "5m", "extra_status_requests": 1, "justification": "more"},
			map[string]any{},
		},
		"POST /v1/operations/{id}/decisions": {
			map[string]any{"option": "inspect_console"},
			map[string]any{"option": "extend"},
			map[string]any{"option": "approve_call"},
		},
		"POST /v1/operations/{id}/cancel": {nil},
	}
	seen := map[string]bool{}
	for _, rt := range routes() {
		key := rt.method + " " + rt.path
		list := bodies[key]
		if list == nil {
			list = []any{nil}
		}
		for _, id := range ids {
			path := strings.ReplaceAll(rt.path, "{id}", id)
			for _, body := range list {
				for _, tok := range []string{adminToken, agentToken, ""} {
					r.do(rt.method, path, tok, body)
					r.do(rt.method, path, tok, body, "Accept", "application/json")
				}
			}
			if rt.method == "GET" && strings.Contains(rt.path, "{id}") {
				r.do(rt.method, path+"?wait=10ms", adminToken, nil)
			}
			seen[key] = true
		}
	}
	r.do("POST", "/v1/operations/op-esc2/cancel", adminToken, nil)
	r.do("GET", "/v1/operations?phase=failed", adminToken, nil)
	for _, rt := range routes() {
		if !seen[rt.method+" "+rt.path] {
			t.Errorf("route %s %s was not exercised", rt.method, rt.path)
		}
	}
	r.assertNoCanary()
	r.seenMu.Lock()
	n := len(r.seen)
	r.seenMu.Unlock()
	t.Logf("%d answers checked", n)
}
