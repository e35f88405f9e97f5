package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaTaskRequest is where a tools/call's 2025-11-25 "task" parameter is
// moved before the SDK decodes the request: the SDK's CallToolParams has
// no such field and would drop it, and _meta is kept whole.
const metaTaskRequest = "dev.pollwarden/task-request"

// TaskTransport wraps a server transport (stdio) so that task-augmented
// tools/call requests keep their "task" parameter through the SDK.
func TaskTransport(t sdk.Transport) sdk.Transport { return taskTransport{t} }

type taskTransport struct{ sdk.Transport }

func (t taskTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return taskConn{c}, nil
}

type taskConn struct{ sdk.Connection }

func (c taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		req.Params = liftTask(req.Params)
	}
	return m, err
}

// maxTaskBody bounds the body read to look for a task parameter; the SDK
// refuses far smaller messages on its own.
const maxTaskBody = 16 << 20

// taskBodies does TaskTransport's work for streamable HTTP: it rewrites a
// POSTed tools/call (alone or in a batch) that carries "task".
func taskBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxTaskBody+1))
		_ = r.Body.Close()
		if err != nil || len(body) > maxTaskBody {
			http.Error(w, "request body unreadable or larger than 16 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		if bytes.Contains(body, []byte(`"task"`)) {
			body = liftTaskBody(body)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// liftTaskBody applies liftTask to each tools/call of a JSON-RPC body;
// anything it cannot parse is left for the SDK to refuse.
func liftTaskBody(body []byte) []byte {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return body
		}
		for i, m := range batch {
			batch[i] = liftTaskMessage(m)
		}
		b, err := json.Marshal(batch)
		if err != nil {
			return body
		}
		return b
	}
	return liftTaskMessage(body)
}

func liftTaskMessage(m []byte) []byte {
	var msg map[string]json.RawMessage
	if json.Unmarshal(m, &msg) != nil {
		return m
	}
	var method string
	if json.Unmarshal(msg["method"], &method) != nil || method != "tools/call" {
		return m
	}
	p := liftTask(msg["params"])
	if bytes.Equal(p, msg["params"]) {
		return m
	}
	msg["params"] = p
	b, err := json.Marshal(msg)
	if err != nil {
		return m
	}
	return b
}

// liftTask moves params.task into params._meta[metaTaskRequest].
func liftTask(params json.RawMessage) json.RawMessage {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return params
	}
	task, ok := p["task"]
	if !ok {
		return params
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := p["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return params
	}
	meta[metaTaskRequest] = task
	delete(p, "task")
	mb, err := json.Marshal(meta)
	if err != nil {
		return params
	}
	p["_meta"] = mb
	b, err := json.Marshal(p)
	if err != nil {
		return params
	}
	return b
}
