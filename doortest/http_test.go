package doortest

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/httpapi"
	"github.com/pollwarden/pollwarden/tokens"
)

const (
	agentToken    = "tok-doortest-agent"
	approverToken = "tok-doortest-approver"
)

// TestHTTPDoor replays the table through a real httpapi handler over
// loopback: an agent token creates, asks and abandons, an approver's
// decides.
func TestHTTPDoor(t *testing.T) { runTable(t, httpDoor{}) }

type httpDoor struct{}

func (httpDoor) fine() bool { return true }

func (httpDoor) do(t *testing.T, r *rig, req request) answer {
	t.Helper()
	if a, ok := httpUseCase(t, r, req); ok {
		return a
	}
	srv := httpServer(t, r)
	switch req.kind {
	case create:
		body := map[string]any{"contract": req.contract}
		set(body, "operation_id", req.opID)
		set(body, "job_id", req.job)
		set(body, "deadline", req.deadline)
		if req.vars != nil {
			body["vars"] = req.vars
		}
		if req.maxRequests != 0 {
			body["max_status_requests"] = req.maxRequests
		}
		if req.priority != "" {
			body["priority"] = number(req.priority)
		}
		return post(t, srv, "/v1/operations", agentToken, body)
	case extend:
		return post(t, srv, "/v1/operations/"+url.PathEscape(req.target)+"/extension-requests", agentToken,
			map[string]any{"extra_time": req.extraTime, "extra_status_requests": req.extraRequests, "justification": req.justification})
	case decide:
		body := map[string]any{"option": req.option}
		if req.escalation != "" {
			body["escalation"] = req.escalation
		}
		return post(t, srv, "/v1/operations/"+url.PathEscape(req.target)+"/decisions", approverToken, body)
	case abandon:
		return post(t, srv, "/v1/operations/"+url.PathEscape(req.target)+"/abandon", agentToken, map[string]any{})
	}
	panic("unknown kind " + req.kind)
}

func set(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// httpServer serves the API over r's store on a loopback port, once per
// rig.
func httpServer(t *testing.T, r *rig) string {
	t.Helper()
	if r.httpURL != "" {
		return r.httpURL
	}
	h := httpapi.NewHandler(httpapi.Options{Ops: r.ops(), Tokens: doorTokens(t),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	r.httpURL = srv.URL
	return srv.URL
}

// doorTokens are the tokens of the doors that authenticate (the API, MCP
// over HTTP): the seeded operations' owner, an approver, an agent that
// sees every operation and one that sees only its own.
func doorTokens(t *testing.T) *tokens.Set {
	t.Helper()
	toks, err := tokens.New(
		tokens.Spec{Name: agentName, Role: pollwarden.RoleAgent, SHA256: tokens.Hash(agentToken)},
		tokens.Spec{Name: "alice", Role: pollwarden.RoleApprover, SHA256: tokens.Hash(approverToken)},
		tokens.Spec{Name: otherAgent, Role: pollwarden.RoleAgent, SHA256: tokens.Hash(otherAgentToken), Scope: tokens.ScopeAll},
		tokens.Spec{Name: stranger, Role: pollwarden.RoleAgent, SHA256: tokens.Hash(strangerToken)},
	)
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

func post(t *testing.T, base, path, token string, body map[string]any) answer {
	t.Helper()
	req, err := http.NewRequest("POST", base+path, bytes.NewReader(rawJSON(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	a := classify(res.StatusCode, b)
	if a.class == accepted && a.id == "" {
		t.Fatalf("%d answer is not a record: %s", res.StatusCode, b)
	}
	return a
}

// classify reduces an API answer to its class; an accepted one carries
// the record's id when it is a record.
func classify(status int, b []byte) answer {
	a := answer{text: string(b)}
	switch {
	case status/100 == 2:
		a.class = accepted
		var out struct {
			ID string `json:"operation_id"`
		}
		_ = json.Unmarshal(b, &out)
		a.id = out.ID
	case status == http.StatusBadRequest, status == http.StatusUnprocessableEntity:
		a.class = invalid
	case status == http.StatusConflict:
		a.class = conflict
	case status == http.StatusForbidden:
		a.class = forbidden
	case status == http.StatusNotFound:
		a.class = notFound
	default:
		a.class = broken
	}
	return a
}

// rawJSON encodes body as a client would send it, except that a string
// that is not UTF-8 is sent as its raw bytes (encoding/json would replace
// them with U+FFFD), as a careless client does.
func rawJSON(body map[string]any) []byte {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	for k, v := range body {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		if s, ok := v.(string); ok && !utf8.ValidString(s) {
			buf.WriteString(`"` + strings.ReplaceAll(s, `"`, `\"`) + `"`)
			continue
		}
		vb, _ := json.Marshal(v)
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}
