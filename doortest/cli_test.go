package doortest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pollwarden/pollwarden/cli"
)

// TestCLIDoor replays the table through cli.Main in-process, with the
// rig's store file and contract directory: create is `wait --json`, a
// decision and abandon are `decide` (whose actor is an approver, the
// store file's holder). The CLI has no command to ask for an extension.
// Exit 2 is a refusal of any kind.
func TestCLIDoor(t *testing.T) { runTable(t, cliDoor{}) }

type cliDoor struct{}

func (cliDoor) fine() bool { return false }

func (cliDoor) do(t *testing.T, r *rig, req request) answer {
	t.Helper()
	if a, ok := cliUseCase(t, r, req); ok {
		return a
	}
	var args []string
	switch req.kind {
	case create:
		args = []string{"wait", "--json", "--store", r.storePath, "--contract", req.contract}
		if req.job != "" {
			args = append(args, "--job-id", req.job)
		}
		if req.opID != "" {
			args = append(args, "--operation-id", req.opID)
		}
		if req.deadline != "" {
			args = append(args, "--deadline", req.deadline)
		}
		for k, v := range req.vars {
			args = append(args, "--var", k+"="+v)
		}
		if req.maxRequests != 0 {
			args = append(args, "--max-requests", fmt.Sprint(req.maxRequests))
		}
		if req.priority != "" {
			args = append(args, "--priority", req.priority)
		}
	case decide:
		args = []string{"decide", "--store", r.storePath, "--by", "alice", req.target, req.option}
		if req.escalation != "" {
			args = append(args, "--escalation", req.escalation)
		}
	case abandon:
		args = []string{"decide", "--store", r.storePath, "--by", "alice", req.target, "abandon"}
	default:
		return answer{class: notOffered}
	}
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Env{Stdin: &bytes.Buffer{}, Stdout: &stdout, Stderr: &stderr, Getenv: r.getenv})
	a := answer{text: stderr.String()}
	switch {
	case code == cli.ExitUsage:
		a.class = refused
	case code == cli.ExitInternal:
		a.class = broken
	default: // 0 or an outcome's exit code: the request was taken
		a.class = accepted
		if req.kind == create {
			var out struct {
				ID string `json:"operation_id"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
				t.Fatalf("wait --json printed no record (exit %d): %s %s", code, stdout.Bytes(), stderr.Bytes())
			}
			a.id = out.ID
		} else {
			a.id = req.target
		}
	}
	return a
}
