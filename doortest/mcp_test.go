package doortest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	pwmcp "github.com/pollwarden/pollwarden/mcp"
)

// TestMCPDoor replays the table through the MCP server with the Go SDK's
// client over an in-memory transport: the stdio server's identity, which
// sees every operation. A tool error is a refusal of any kind; MCP has no
// decision tool (decisions are a person's); abandon is tasks/cancel of the
// operation's task, spoken in raw JSON-RPC as the client library has no
// call for it.
func TestMCPDoor(t *testing.T) { runTable(t, mcpDoor{}) }

type mcpDoor struct{}

func (mcpDoor) fine() bool { return false }

func (mcpDoor) do(t *testing.T, r *rig, req request) answer {
	t.Helper()
	if a, ok := mcpUseCase(t, r, req); ok {
		return a
	}
	cs := mcpSession(t, r)
	args := map[string]any{}
	var tool string
	switch req.kind {
	case create:
		tool = pwmcp.ToolWatchJob
		args["contract"] = req.contract
		set(args, "operation_id", req.opID)
		set(args, "job_id", req.job)
		set(args, "deadline", req.deadline)
		if req.vars != nil {
			args["vars"] = req.vars
		}
		if req.maxRequests != 0 {
			args["max_status_requests"] = req.maxRequests
		}
		if req.priority != "" {
			args["priority"] = number(req.priority)
		}
	case extend:
		tool = pwmcp.ToolRequestExtension
		args = map[string]any{"operation_id": req.target, "extra_time": req.extraTime,
			"extra_status_requests": req.extraRequests, "justification": req.justification}
	case abandon:
		return mcpTasksCancel(t, r, req.target)
	default:
		return answer{class: notOffered}
	}
	// Raw JSON, so that a string that is not UTF-8 reaches the server as
	// its bytes, as far as the transport carries them.
	return callTool(t, cs, tool, json.RawMessage(rawJSON(args)))
}

// mcpSession connects a client to an MCP server over r's store, once per
// rig.
func mcpSession(t *testing.T, r *rig) *sdk.ClientSession {
	t.Helper()
	if r.mcp != nil {
		return r.mcp
	}
	srv := pwmcp.NewServer(pwmcp.Options{Ops: r.ops()})
	serverT, clientT := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ss, err := srv.Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "doortest", Version: "v0"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	r.mcp = cs
	return cs
}

// mcpSessionAs connects a client to the MCP server over r's store through
// its HTTP handler, as the daemon serves /mcp, presenting token: the
// tools then act as that token's holder.
func mcpSessionAs(t *testing.T, r *rig, token string) *sdk.ClientSession {
	t.Helper()
	srv := pwmcp.NewServer(pwmcp.Options{Ops: r.ops()})
	h := pwmcp.NewHTTPHandler(srv, doorTokens(t), slog.New(slog.NewTextHandler(io.Discard, nil)))
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	t.Cleanup(h.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "doortest", Version: "v0"}, nil).Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: hs.URL + pwmcp.Path, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// bearer adds a token to every request of an HTTP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}

// mcpTasksCancel connects a raw JSON-RPC client to a fresh session of the
// MCP server over r's store and cancels the task of operation id.
func mcpTasksCancel(t *testing.T, r *rig, id string) answer {
	t.Helper()
	srv := pwmcp.NewServer(pwmcp.Options{Ops: r.ops()})
	serverT, clientT := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ss, err := srv.Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	conn, err := clientT.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	call := func(n int, method string, params any) *jsonrpc.Response {
		t.Helper()
		rid, _ := jsonrpc.MakeID(float64(n))
		b, _ := json.Marshal(params)
		if err := conn.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: b}); err != nil {
			t.Fatal(err)
		}
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			if res, ok := msg.(*jsonrpc.Response); ok && res.ID == rid {
				return res
			}
		}
	}
	if res := call(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "doortest", "version": "v0"}}); res.Error != nil {
		t.Fatalf("initialize: %v", res.Error)
	}
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	res := call(2, "tasks/cancel", map[string]any{"taskId": id})
	if res.Error != nil {
		return answer{class: refused, text: res.Error.Error()}
	}
	var task struct {
		ID     string `json:"taskId"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(res.Result, &task); err != nil || task.Status != "cancelled" {
		t.Fatalf("tasks/cancel answered %s (%v), want a cancelled task", res.Result, err)
	}
	return answer{class: accepted, id: task.ID}
}
