package contract

import (
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

const sessionBase = `version: 1
name: mcp-peer
base_url: "https://mcp.example.com"
status:
  url: "/mcp"
  method: POST
  safe: true
  body: {method: tasks/get, params: {taskId: "{job_id}"}}
  session:
%s
state: {path: result.status, pending: [working], success: [completed]}
result: {require: [{path: result.taskId, kind: string}]}
`

func TestSessionParses(t *testing.T) {
	c, err := Parse([]byte(strings.Replace(sessionBase, "%s", `    body: {method: initialize}
    notify: {method: notifications/initialized}
    header: Mcp-Session-Id`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	want := pollwarden.SessionSpec{URL: "https://mcp.example.com/mcp", Method: "POST", Body: `{"method":"initialize"}`,
		Notify: `{"method":"notifications/initialized"}`, Header: "Mcp-Session-Id"}
	if got := c.Status.Session; got == nil || *got != want {
		t.Fatalf("session %+v, want %+v", got, want)
	}
	if !strings.Contains(Summary(c), "every request carries its Mcp-Session-Id") {
		t.Errorf("contract check does not show the session:\n%s", Summary(c))
	}
}

func TestSessionProblems(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"no header":         {"    body: {method: initialize}", "status.session.header"},
		"a job in its body": {"    body: {id: \"{job_id}\"}\n    header: Mcp-Session-Id", "unknown variable {job_id}"},
		"another origin":    {"    url: https://elsewhere.example.com/mcp\n    header: Mcp-Session-Id", "not among the status call's origins"},
		"a bad header name": {"    header: \"Mcp Session\"", "must be a header name"},
		"an unknown key":    {"    header: Mcp-Session-Id\n    cookie: x", "cookie"},
	} {
		_, err := Parse([]byte(strings.Replace(sessionBase, "%s", tc.yaml, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want it to name %q", name, err, tc.want)
		}
	}
}

// createdAt + ttl: the expiry is relative; a null ttl is no expiry; a
// delay that is not a number is passed on for the core to reject.
func TestRelativeExpiry(t *testing.T) {
	c, err := Parse([]byte(strings.Replace(sessionBase, "%s", "    header: Mcp-Session-Id", 1) + `hints:
  job_expires_at: {path: result.createdAt, after: {path: result.ttl, unit: milliseconds}}
`))
	if err != nil {
		t.Fatal(err)
	}
	x, err := Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string]any{
		`{"result":{"status":"working","createdAt":"2025-11-25T10:30:00Z","ttl":30000}}`: "2025-11-25T10:30:30Z",
		`{"result":{"status":"working","createdAt":"2025-11-25T10:30:00Z","ttl":null}}`:  nil,
		`{"result":{"status":"working","createdAt":"2025-11-25T10:30:00Z","ttl":"30s"}}`: "30s",
		`{"result":{"status":"working","ttl":30000}}`:                                    nil,
	} {
		if got := x.Extract([]byte(body)).JobExpiresAt; got != want {
			t.Errorf("%s: expiry %v, want %v", body, got, want)
		}
	}
}
