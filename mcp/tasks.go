package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/mcptask"
)

// Tasks: watch_job, submit_job and wait_job may run as MCP tasks, in the 2025-11-25
// shape (the client asks with params.task) or the extension's (the client
// declares io.modelcontextprotocol/tasks, and the server decides). A task
// is a view of one operation, computed from the store on every request:
// its id is the operation id, it survives a restart with the record, and
// looking at it never sends a provider request.

const (
	// taskRetention is how long after the deadline a task's ttl runs, so
	// a host that treats the ttl as a backstop still sees the escalation
	// the deadline itself causes.
	taskRetention = time.Hour
	// decisionPoll is the poll interval of a task waiting for a person.
	decisionPoll = 30 * time.Second
	// duePoll is the poll interval once the next status request is due
	// or in flight: its answer is recorded within moments.
	duePoll = time.Second
	// coreTasksVersion is the protocol version with tasks in the core.
	coreTasksVersion = "2025-11-25"
	methodDiscover   = "server/discover"
)

// taskShape says which wire shape one request speaks.
type taskShape int

const (
	noTask taskShape = iota
	coreTask
	extTask
)

// addTasks registers the task methods and the middleware that runs
// watch_job and wait_job as tasks.
func (s *server) addTasks(srv *sdk.Server) {
	srv.AddReceivingMiddleware(s.taskMiddleware)
	for _, err := range []error{
		sdk.AddReceivingCustomMethod(srv, mcptask.MethodGet, s.tasksGet),
		sdk.AddReceivingCustomMethod(srv, mcptask.MethodResult, s.tasksResult),
		sdk.AddReceivingCustomMethod(srv, mcptask.MethodList, s.tasksList),
		sdk.AddReceivingCustomMethod(srv, mcptask.MethodCancel, s.tasksCancel),
		sdk.AddReceivingCustomMethod(srv, mcptask.MethodUpdate, s.tasksUpdate),
	} {
		if err != nil {
			panic(err) // only a method name clashing with the SDK's own
		}
	}
}

type taskParams struct {
	sdk.ParamsBase
	TaskID string `json:"taskId"`
}

// id is the task id of p, which the SDK leaves nil when params are
// omitted.
func (p *taskParams) id() string {
	if p == nil {
		return ""
	}
	return p.TaskID
}

type listTasksParams struct {
	sdk.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type updateTaskParams struct {
	sdk.ParamsBase
	TaskID         string          `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// wire is a result the SDK has no type for: v's JSON object, with the
// _meta the SDK may add.
type wire struct {
	sdk.ResultBase
	v any
}

func (w *wire) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(w.v)
	if err != nil || len(w.Meta) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	meta, err := json.Marshal(w.Meta)
	if err != nil {
		return nil, err
	}
	m["_meta"] = meta
	return json.Marshal(m)
}

func rpcError(code int64, format string, args ...any) error {
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// extDeclared reports whether the client declared the tasks extension,
// on this request (2026-07-28 framing) or when it initialized.
func extDeclared(meta map[string]any, ss *sdk.ServerSession) bool {
	if caps, ok := meta[mcptask.MetaClientCapabilities].(map[string]any); ok {
		if ext, ok := caps["extensions"].(map[string]any); ok {
			if _, ok := ext[mcptask.ExtensionID]; ok {
				return true
			}
		}
	}
	if ss == nil {
		return false
	}
	if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil {
		_, ok := ip.Capabilities.Extensions[mcptask.ExtensionID]
		return ok
	}
	return false
}

// initDeclaresExt reports whether an initialize request declares the
// tasks extension in its capabilities.
func initDeclaresExt(req sdk.Request) bool {
	ir, ok := req.(*sdk.ServerRequest[*sdk.InitializeParams])
	if !ok || ir.Params == nil || ir.Params.Capabilities == nil {
		return false
	}
	_, ok = ir.Params.Capabilities.Extensions[mcptask.ExtensionID]
	return ok
}

func sessionOf(req sdk.Request) *sdk.ServerSession {
	ss, _ := req.GetSession().(*sdk.ServerSession)
	return ss
}

func protocolVersion(ss *sdk.ServerSession) string {
	if ss == nil {
		return ""
	}
	if ip := ss.InitializeParams(); ip != nil {
		return ip.ProtocolVersion
	}
	return ""
}

// shapeOf is the shape a task method answers in.
func shapeOf(p sdk.Params, ss *sdk.ServerSession) taskShape {
	if extDeclared(p.GetMeta(), ss) {
		return extTask
	}
	return coreTask
}

func (s *server) taskMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "initialize", methodDiscover:
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			return advertiseTasks(res, initDeclaresExt(req))
		case "tools/list":
			res, err := next(ctx, method, req)
			if err != nil || protocolVersion(sessionOf(req)) != coreTasksVersion {
				return res, err
			}
			return withTaskSupport(res)
		case "tools/call":
			if ctr, ok := req.(*sdk.CallToolRequest); ok {
				if res, err, handled := s.callAsTask(ctx, ctr, func() (sdk.Result, error) { return next(ctx, method, req) }); handled {
					return res, err
				}
			}
		}
		return next(ctx, method, req)
	}
}

// advertiseTasks adds the task capabilities to an initialize or discover
// answer: the 2025-11-25 "tasks" for that version, the extension for
// 2026-07-28 and later or for a client that declared it (answered in its
// own terms); older versions are left unchanged.
func advertiseTasks(res sdk.Result, declared bool) (sdk.Result, error) {
	ir, ok := res.(*sdk.InitializeResult)
	if !ok || ir.Capabilities == nil {
		if dr, ok := res.(*sdk.DiscoverResult); ok && dr.Capabilities != nil {
			dr.Capabilities.AddExtension(mcptask.ExtensionID, nil)
		}
		return res, nil
	}
	if ir.ProtocolVersion > coreTasksVersion || declared {
		ir.Capabilities.AddExtension(mcptask.ExtensionID, nil)
	}
	if ir.ProtocolVersion != coreTasksVersion {
		return ir, nil
	}
	m, err := toMap(ir)
	if err != nil {
		return nil, err
	}
	var caps map[string]any
	_ = json.Unmarshal(m["capabilities"], &caps)
	caps["tasks"] = map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
		"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
	if m["capabilities"], err = json.Marshal(caps); err != nil {
		return nil, err
	}
	return &wire{v: m}, nil
}

// withTaskSupport marks the tools that may wait (watch_job, submit_job,
// wait_job) as task-capable in a 2025-11-25 tools/list answer.
func withTaskSupport(res sdk.Result) (sdk.Result, error) {
	lr, ok := res.(*sdk.ListToolsResult)
	if !ok {
		return res, nil
	}
	m, err := toMap(lr)
	if err != nil {
		return nil, err
	}
	var tools []map[string]any
	if err := json.Unmarshal(m["tools"], &tools); err != nil {
		return nil, err
	}
	for _, t := range tools {
		if name, _ := t["name"].(string); runsAsTask(name) {
			t["execution"] = map[string]any{"taskSupport": "optional"}
		}
	}
	if m["tools"], err = json.Marshal(tools); err != nil {
		return nil, err
	}
	return &wire{v: m}, nil
}

func toMap(v any) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	return m, json.Unmarshal(b, &m)
}

// callAsTask runs a tools/call as a task when the client asked for one
// (2025-11-25) or declared the extension and the tool may wait; handled
// is false for a call that stays an ordinary one.
func (s *server) callAsTask(ctx context.Context, req *sdk.CallToolRequest, call func() (sdk.Result, error)) (sdk.Result, error, bool) {
	p := req.Params
	_, asked := p.Meta[metaTaskRequest]
	if asked {
		delete(p.Meta, metaTaskRequest)
	}
	shape := noTask
	switch {
	case extDeclared(p.Meta, sessionOf(req)):
		shape = extTask
	case asked:
		shape = coreTask
	}
	waits := runsAsTask(p.Name)
	switch {
	case shape == noTask:
		return nil, nil, false
	case !waits && shape == coreTask:
		// -32601, which the specification suggests, is rewritten by the SDK
		// into a bare "method not found"; this code keeps the message.
		return nil, rpcError(mcptask.CodeInvalidParams, "%s does not run as a task; call it without the task parameter (watch_job, submit_job and wait_job may run as tasks)", display.Clip(p.Name)), true
	case !waits:
		return nil, nil, false
	}
	var id string
	if p.Name != ToolWaitJob { // watch_job, submit_job: create, then the task is the operation
		res, err := call()
		if err != nil {
			return res, err, true
		}
		ctr, _ := res.(*sdk.CallToolResult)
		if ctr == nil || ctr.IsError {
			if shape == extTask && ctr != nil {
				r, err := extResult(ctr)
				return r, err, true
			}
			if shape == extTask {
				return res, nil, true
			}
			return nil, rpcError(mcptask.CodeInvalidParams, "%s", toolText(ctr)), true
		}
		id = answerID(ctr)
	} else {
		var in struct {
			OperationID string `json:"operation_id"`
		}
		_ = json.Unmarshal(p.Arguments, &in)
		id = in.OperationID
	}
	op, err := s.get(ctx, id)
	if err != nil {
		if shape == extTask {
			r, err := extResult(&sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}})
			return r, err, true
		}
		return nil, rpcError(mcptask.CodeInvalidParams, "%v", err), true
	}
	now := s.ops.Clock().Now()
	if shape == extTask {
		// The server decides: an operation that no longer waits is answered
		// at once, as the tool would.
		if taskStatus(op) != mcptask.Working {
			r, err := extResult(s.toolResult(op))
			return r, err, true
		}
		return &wire{v: mcptask.CreateTaskResultV2{ResultType: mcptask.ResultTypeTask, TaskV2: taskV2(op, now)}}, nil, true
	}
	return &wire{v: mcptask.CreateTaskResult{Task: coreTaskOf(op, now)}}, nil, true
}

// extResult is r as a 2026-07-28 CallToolResult, which names its
// resultType ("complete"): the SDK v1.8.0 leaves it out, and the
// extension's clients refuse a result without it.
func extResult(r *sdk.CallToolResult) (*wire, error) {
	m, err := toMap(r)
	if err != nil {
		return nil, err
	}
	m["resultType"] = json.RawMessage(`"` + mcptask.ResultTypeComplete + `"`)
	return &wire{v: m}, nil
}

func toolText(r *sdk.CallToolResult) string {
	if r == nil {
		return "the tool gave no answer"
	}
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			return t.Text
		}
	}
	return "the tool refused the call"
}

func answerID(r *sdk.CallToolResult) string {
	var a struct {
		OperationID string `json:"operation_id"`
	}
	b, _ := json.Marshal(r.StructuredContent)
	_ = json.Unmarshal(b, &a)
	return a.OperationID
}

// runsAsTask tells the tools that may run as tasks (SPEC "MCP tasks"):
// those that start or follow a wait.
func runsAsTask(name string) bool {
	return name == ToolWatchJob || name == ToolSubmitJob || name == ToolWaitJob
}

// toolResult is the tool's answer for op, as watch_job or wait_job give it.
func (s *server) toolResult(op *pollwarden.Operation) *sdk.CallToolResult {
	a := s.answer(op)
	b, _ := json.Marshal(a)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}
