package contract

import (
	"encoding/json"
	"github.com/pollwarden/pollwarden"
	"strings"
	"testing"
)

const rpcContract = `version: 1
name: rpc
vars:
  session: {pattern: "[A-Za-z0-9-]+", default: s-1}
status:
  url: "https://mcp.example.com/mcp"
  method: POST
  safe: true
  body: {jsonrpc: "2.0", id: 1, method: tasks/get, params: {taskId: "{job_id}", note: "in {session}", n: 3, ok: true}}
state: {path: result.status, pending: [working], success: [completed]}
`

// TestStatusBodyTemplate: the body is JSON built from the template; a job
// id or variable fills a string and can never add a key or end it.
func TestStatusBodyTemplate(t *testing.T) {
	c, err := Parse([]byte(rpcContract))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Status.Safe || c.Status.UnsafeMethod {
		t.Fatalf("safe %v, unsafe %v", c.Status.Safe, c.Status.UnsafeMethod)
	}
	evil := `t1","id":2,"x":"`
	b, err := StatusBody(c, evil, map[string]string{"session": "abc"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID     int
		Method string
		Params map[string]any
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if got.ID != 1 || got.Method != "tasks/get" || got.Params["taskId"] != evil || got.Params["note"] != "in abc" || got.Params["n"] != float64(3) || got.Params["ok"] != true {
		t.Fatalf("body %s", b)
	}
	if b, _ := StatusBody(&pollwarden.ContractSpec{}, "x", nil); b != nil {
		t.Fatalf("a contract without body sends none: %s", b)
	}
}

func TestStatusBodyProblems(t *testing.T) {
	for name, tc := range map[string]struct{ from, to, want string }{
		"safe on GET":      {"  method: POST\n", "", "status.safe: method GET is safe already"},
		"safe and unsafe":  {"  safe: true\n", "  safe: true\n  unsafe_method: true\n", "safe and unsafe_method contradict"},
		"POST undeclared":  {"  safe: true\n", "", "add safe: true if the provider documents this call as a read"},
		"unknown variable": {`note: "in {session}"`, `note: "in {region}"`, "status.body: unknown variable {region}"},
		"body on GET":      {"  method: POST\n  safe: true\n", "", "status.body: a GET status call sends no body"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(strings.Replace(rpcContract, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v; want %q", err, tc.want)
			}
		})
	}
}
