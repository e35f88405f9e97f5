package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestAuthMatrix sends every route of the table with no token, an unknown
// one and each role's, each time as a valid request, and checks 401 for
// the first two, 403 where the role is too small and 2xx otherwise.
func TestAuthMatrix(t *testing.T) {
	r := newRig(t)
	r.fp.Script("waiting-job", fp.State("running", nil))
	r.create("op-read", "waiting-job", nil)
	r.escalated("op-esc", "export")

	type caller struct {
		name, token string
		role        access
	}
	callers := []caller{
		{"no token", "", -1},
		{"unknown token", unknownToken, -1},
		{"agent", agentToken, agents},
		{"approver", approverToken, approvers},
		{"admin", adminToken, admins},
	}
	n := 0
	incident := "" // opened at the first incident route: it holds the key's operations
	// request builds a valid request for the route, fresh for each call
	// that consumes something (an id to create, an escalation to cancel).
	request := func(rt route, c caller) (path string, body any) {
		n++
		path = strings.ReplaceAll(rt.path, "{id}", "op-read")
		switch rt.method + " " + rt.path {
		case "POST /v1/operations":
			return path, map[string]any{"operation_id": fmt.Sprintf("op-auth-%d", n), "contract": "export", "job_id": "waiting-job"}
		case "POST /v1/operations/{id}/extension-requests":
			return path, map[string]any{"extra_time": "10m", "extra_status_requests": 2, "justification": "the export is large"}
		case "POST /v1/operations/{id}/decisions":
			return strings.ReplaceAll(rt.path, "{id}", "op-esc"), map[string]any{"option": "inspect_console", "note": "looked"}
		case "POST /v1/operations/{id}/cancel":
			id := fmt.Sprintf("op-cancel-%d", n)
			if c.role >= approvers {
				r.escalated(id, "export")
			}
			return strings.ReplaceAll(rt.path, "{id}", id), nil
		case "GET /v1/incidents/{id}", "POST /v1/incidents/{id}/decisions":
			if incident == "" {
				incident = r.credentialIncident()
			}
			path = strings.ReplaceAll(rt.path, "{id}", incident)
			if rt.method == "GET" {
				return path, nil
			}
			return path, map[string]any{"option": "abandon"}
		case "POST /v1/operations/{id}/abandon":
			id := fmt.Sprintf("op-abandon-%d", n)
			if c.role >= agents {
				r.create(id, "waiting-job", nil)
			}
			return strings.ReplaceAll(rt.path, "{id}", id), nil
		}
		return path, nil
	}
	for _, rt := range routes() {
		for _, c := range callers {
			t.Run(rt.method+" "+rt.path+"/"+c.name, func(t *testing.T) {
				path, body := request(rt, c)
				if rt.path == "/v1/callbacks/{contract}" {
					// The signature authenticates a callback, whatever the
					// token: a signed one is accepted from every caller, and
					// an admin's token without a signature is refused.
					b := []byte(`{"action":"completed","workflow_run":{"id":1}}`)
					m := hmac.New(sha256.New, []byte("rig-callback-secret"))
					m.Write(b)
					sig := "sha256=" + hex.EncodeToString(m.Sum(nil))
					if a := r.do("POST", "/v1/callbacks/plain", c.token, b, "X-Hub-Signature-256", sig); a.status != http.StatusAccepted {
						t.Fatalf("signed callback: %d %s, want 202", a.status, a.body)
					}
					if a := r.do("POST", "/v1/callbacks/plain", adminToken, b); a.status != http.StatusUnauthorized {
						t.Fatalf("unsigned callback with an admin token: %d %s, want 401", a.status, a.body)
					}
					return
				}
				a := r.do(rt.method, path, c.token, body)
				switch {
				case need(rt) == anyone:
					if a.status/100 != 2 {
						t.Fatalf("%d %s, want 2xx for anyone", a.status, a.body)
					}
				case c.role < 0:
					if a.status != http.StatusUnauthorized || a.errorCode(t) != codeUnauthorized {
						t.Fatalf("%d %s, want 401 unauthorized", a.status, a.body)
					}
					if a.header.Get("WWW-Authenticate") == "" {
						t.Error("401 without WWW-Authenticate")
					}
				case c.role < need(rt):
					if a.status != http.StatusForbidden || a.errorCode(t) != codeForbidden {
						t.Fatalf("%d %s, want 403 forbidden", a.status, a.body)
					}
				case rt.path == "/v1/incidents/{id}/decisions":
					// Past the guard: the first approver's decision closes
					// the incident, and the next finds it closed.
					if a.status != http.StatusOK && a.status != http.StatusConflict {
						t.Fatalf("%d %s, want 200, or 409 once it is closed", a.status, a.body)
					}
				case rt.path == "/v1/operations/{id}/result":
					// Past the guard, a waiting operation's result is refused
					// by the use case, not by auth.
					if a.status != http.StatusConflict || !strings.Contains(string(a.body), "only once it has succeeded") {
						t.Fatalf("%d %s, want 409 naming the phase", a.status, a.body)
					}
				default:
					if a.status/100 != 2 {
						t.Fatalf("%d %s, want 2xx", a.status, a.body)
					}
				}
			})
		}
	}
}

// TestAuthBeforeExistence: an unauthorised caller cannot learn whether an
// operation exists, nor reach a body parser.
func TestAuthBeforeExistence(t *testing.T) {
	r := newRig(t)
	for _, tok := range []string{"", unknownToken} {
		if a := r.do("GET", "/v1/operations/nope", tok, nil); a.status != http.StatusUnauthorized {
			t.Errorf("GET unknown op with %q: %d", tok, a.status)
		}
		if a := r.do("POST", "/v1/operations", tok, "{not json"); a.status != http.StatusUnauthorized {
			t.Errorf("bad body with %q: %d", tok, a.status)
		}
	}
	if a := r.do("POST", "/v1/operations/nope/decisions", agentToken, "{not json"); a.status != http.StatusForbidden {
		t.Errorf("agent decision with a bad body: %d, want 403", a.status)
	}
}

func TestAuthHeaderForms(t *testing.T) {
	r := newRig(t)
	for _, h := range []string{"Basic " + agentToken, agentToken, "Bearer", "Bearer    ", "bearer " + unknownToken} {
		a := r.do("GET", "/v1/operations", "", nil, "Authorization", h)
		if a.status != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d, want 401", h, a.status)
		}
		if strings.Contains(string(a.body), agentToken) {
			t.Errorf("the answer repeats the token: %s", a.body)
		}
	}
	if a := r.do("GET", "/v1/operations", "", nil, "Authorization", "bearer "+agentToken); a.status != http.StatusOK {
		t.Errorf("lower-case scheme: %d", a.status)
	}
}
