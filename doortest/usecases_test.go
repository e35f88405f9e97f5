package doortest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden/cli"
	pwmcp "github.com/pollwarden/pollwarden/mcp"
)

// The use cases beyond create, extend, decide and abandon, each driven
// through every door that offers it.
const (
	readOp      kind = "read"
	readEvents  kind = "events"
	listOps     kind = "list"
	waitOn      kind = "wait"
	cancelOp    kind = "cancel"
	fetchResult kind = "fetch-result"
)

// otherAgent is a second agent token that sees every operation (scope
// all) but owns none of the seeded ones; stranger is a third that sees
// only its own, so none of the seeded ones.
const (
	otherAgent      = "other-agent"
	otherAgentToken = "tok-doortest-other"
	stranger        = "stranger-agent"
	strangerToken   = "tok-doortest-stranger"
)

var useCaseTable = []row{
	{name: "read a waiting operation", req: request{kind: readOp, target: opWaiting}, want: accepted},
	{name: "read a finished operation", req: request{kind: readOp, target: opDone}, want: accepted},
	{name: "read an unknown operation", req: request{kind: readOp, target: "op-nope"}, want: notFound, field: "op-nope"},

	{name: "list every phase", req: request{kind: listOps}, want: accepted},
	{name: "list the escalated", req: request{kind: listOps, phase: "escalated"}, want: accepted},
	{name: "list a phase that does not exist", req: request{kind: listOps, phase: "paused"}, want: invalid, field: "phase"},
	{name: "list the succeeded", req: request{kind: listOps, phase: "succeeded"}, want: accepted, field: opDone, absent: opWaiting},
	{name: "list the waiting, one at most", req: request{kind: listOps, phase: "waiting", limit: "1"}, want: accepted, field: opWaiting, absent: opDone},
	{name: "list with a limit that is not a number", req: request{kind: listOps, limit: "many"}, want: invalid, field: "limit"},
	{name: "list as an agent that sees only its own", req: request{kind: listOps, as: stranger}, want: accepted, absent: "op-"},

	{name: "read another agent's operation", req: request{kind: readOp, target: opWaiting, as: stranger}, want: notFound, field: "no operation"},
	{name: "events of a waiting operation", req: request{kind: readEvents, target: opWaiting}, want: accepted},
	{name: "events of another agent's operation", req: request{kind: readEvents, target: opWaiting, as: stranger}, want: notFound, field: "no operation"},
	{name: "events of an unknown operation", req: request{kind: readEvents, target: "op-nope"}, want: notFound, field: "op-nope"},
	{name: "wait on another agent's operation", req: request{kind: waitOn, target: opWaiting, as: stranger}, want: notFound, field: "no operation"},

	{name: "wait on a finished operation answers at once", req: request{kind: waitOn, target: opDone}, want: accepted},
	{name: "wait on an unknown operation", req: request{kind: waitOn, target: "op-nope"}, want: notFound, field: "op-nope"},

	{name: "cancel a waiting operation", req: request{kind: cancelOp, target: opWaiting}, want: accepted},
	{name: "cancel twice answers the record as it is", before: []request{{kind: cancelOp, target: opWaiting}},
		req: request{kind: cancelOp, target: opWaiting}, want: accepted, sameID: true},
	{name: "cancel a finished operation", req: request{kind: cancelOp, target: opDone}, want: conflict, field: "succeeded"},
	{name: "cancel an unknown operation", req: request{kind: cancelOp, target: "op-nope"}, want: notFound, field: "op-nope"},

	{name: "abandon twice", before: []request{{kind: abandon, target: opWaiting}}, req: request{kind: abandon, target: opWaiting}, want: conflict, field: opWaiting},
	{name: "abandon by another agent", req: request{kind: abandon, target: opWaiting, as: otherAgent}, want: forbidden, field: "abandon only its own"},
	{name: "abandon an unknown operation", req: request{kind: abandon, target: "op-nope"}, want: notFound, field: "op-nope"},

	{name: "extension on an abandoned operation", before: []request{{kind: abandon, target: opWaiting}}, req: ext(opWaiting, "5m", 1), want: conflict},
	{name: "decision without an option", req: request{kind: decide, target: opWaiting}, want: invalid, field: "option"},
	{name: "decision with an option not offered", req: request{kind: decide, target: opDone, option: "extend"}, want: conflict, field: "succeeded"},
	{name: "decision naming a question that is not open", req: request{kind: decide, target: opWaiting, option: "abandon", escalation: "esc-1"},
		want: conflict, field: "esc-1 is not open"},
	{name: "decision naming a question already answered", before: []request{{kind: decide, target: opWaiting, option: "abandon"}},
		req: request{kind: decide, target: opWaiting, option: "extend", escalation: "esc-1"}, want: conflict, field: "already decided: abandon by alice"},
	{name: "decision naming an overlong question", req: request{kind: decide, target: opWaiting, option: "abandon", escalation: strings.Repeat("e", 65)},
		want: invalid, field: "escalation"},
	{name: "retry_credential with nothing refused", req: request{kind: decide, target: opWaiting, option: "retry_credential"}, want: conflict, field: "waiting"},

	{name: "result before success", req: request{kind: fetchResult, target: opWaiting}, want: conflict, field: "succeeded"},
	{name: "result of an unknown operation", req: request{kind: fetchResult, target: "op-nope"}, want: notFound, field: "op-nope"},
}

func TestCLIDoorUseCases(t *testing.T)  { runRows(t, cliDoor{}, useCaseTable) }
func TestHTTPDoorUseCases(t *testing.T) { runRows(t, httpDoor{}, useCaseTable) }
func TestMCPDoorUseCases(t *testing.T)  { runRows(t, mcpDoor{}, useCaseTable) }

// TestCancelTwiceSendsOnce: through each door that cancels, a second
// cancel sends no second request to the provider (the contract does not
// document cancel as idempotent).
func TestCancelTwiceSendsOnce(t *testing.T) {
	t.Parallel()
	for _, d := range []door{cliDoor{}, httpDoor{}} {
		r := newRig(t)
		for range 2 {
			if a := d.do(t, r, request{kind: cancelOp, target: opWaiting}); a.class != accepted {
				t.Fatalf("%T cancel: %s %s", d, a.class, a.text)
			}
		}
		if n := r.fp.Cancels("run"); n != 1 {
			t.Errorf("%T: the provider got %d cancels, want 1", d, n)
		}
	}
}

// cliUseCase drives the use cases of this file through cli.Main: read is
// `ops show --json`, events `audit show`, list `ops list --json`, cancel
// `decide … cancel_at_provider` and the result `result`. wait is the create command; another agent's
// identity does not exist here (the CLI's authority is the store file).
func cliUseCase(t *testing.T, r *rig, req request) (answer, bool) {
	t.Helper()
	if req.as != "" {
		return answer{class: notOffered}, true
	}
	var args []string
	switch req.kind {
	case readOp:
		args = []string{"ops", "show", "--json", "--store", r.storePath, req.target}
	case readEvents:
		args = []string{"audit", "show", "--store", r.storePath, req.target}
	case listOps:
		args = []string{"ops", "list", "--json", "--store", r.storePath}
		if req.phase != "" {
			args = append(args, "--phase", req.phase)
		}
		if req.limit != "" {
			args = append(args, "--limit", req.limit)
		}
	case cancelOp:
		args = []string{"decide", "--store", r.storePath, "--by", "alice", req.target, "cancel_at_provider"}
	case fetchResult:
		args = []string{"result", "--store", r.storePath, req.target}
	case waitOn:
		return answer{class: notOffered}, true
	default:
		return answer{}, false
	}
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Env{Stdin: &bytes.Buffer{}, Stdout: &stdout, Stderr: &stderr, Getenv: r.getenv})
	switch code {
	case cli.ExitOK:
		return answer{class: accepted, id: req.target, text: stdout.String()}, true
	case cli.ExitUsage:
		return answer{class: refused, text: stderr.String()}, true
	}
	return answer{class: broken, text: stderr.String()}, true
}

// httpUseCase drives them through the API: an agent reads, lists, waits
// (?wait=1s) and fetches; an approver cancels; req.as names another
// agent's token.
func httpUseCase(t *testing.T, r *rig, req request) (answer, bool) {
	t.Helper()
	token := map[string]string{"": agentToken, otherAgent: otherAgentToken, stranger: strangerToken}[req.as]
	path := "/v1/operations/" + url.PathEscape(req.target)
	switch req.kind {
	case readOp:
		return get(t, r, path, token), true
	case readEvents:
		return get(t, r, path+"/audit", token), true
	case waitOn:
		return get(t, r, path+"?wait=1s", token), true
	case listOps:
		q := url.Values{}
		for k, v := range map[string]string{"phase": req.phase, "limit": req.limit} {
			if v != "" {
				q.Set(k, v)
			}
		}
		return get(t, r, "/v1/operations?"+q.Encode(), token), true
	case fetchResult:
		return get(t, r, path+"/result", token), true
	case cancelOp:
		return post(t, httpServer(t, r), path+"/cancel", approverToken, map[string]any{}), true
	case abandon:
		if req.as != "" {
			return post(t, httpServer(t, r), path+"/abandon", token, map[string]any{}), true
		}
	}
	return answer{}, false
}

// get is post's GET: a 2xx is accepted, with the record's id when the
// answer is one.
func get(t *testing.T, r *rig, path, token string) answer {
	t.Helper()
	req, err := http.NewRequest("GET", httpServer(t, r)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return classify(res.StatusCode, b)
}

// mcpUseCase drives them through the tools: get_job, list_jobs,
// wait_job (1 s) and get_result. MCP has no cancel (a person's decision),
// no audit tool and no list limit (a tool's list keeps the default
// bound). Another agent's request goes through MCP over HTTP with its
// token; the stdio server has one identity.
func mcpUseCase(t *testing.T, r *rig, req request) (answer, bool) {
	t.Helper()
	var tool string
	args := map[string]any{"operation_id": req.target}
	switch {
	case req.kind == abandon && req.as != "", req.kind == cancelOp, req.kind == readEvents, req.limit != "":
		return answer{class: notOffered}, true
	case req.kind == readOp:
		tool = pwmcp.ToolGetJob
	case req.kind == waitOn:
		tool, args["max_wait_seconds"] = pwmcp.ToolWaitJob, 1
	case req.kind == fetchResult:
		tool = pwmcp.ToolGetResult
	case req.kind == listOps:
		tool, args = pwmcp.ToolListJobs, map[string]any{}
		set(args, "phase", req.phase)
	default:
		return answer{}, false
	}
	cs := mcpSession(t, r)
	if req.as != "" {
		cs = mcpSessionAs(t, r, map[string]string{otherAgent: otherAgentToken, stranger: strangerToken}[req.as])
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return answer{class: refused, text: err.Error()}, true
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return answer{class: refused, text: text.String()}, true
	}
	return answer{class: accepted, id: req.target, text: text.String()}, true
}
