package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/mcptask"
	"github.com/pollwarden/pollwarden/policy"
)

// Tasks: watch_job and wait_job may run as MCP tasks, in the 2025-11-25
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
	// pollMargin is added to the time to the next status request, so a
	// host looks once its answer has been recorded.
	pollMargin = time.Second
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

// withTaskSupport marks watch_job and wait_job as task-capable in a
// 2025-11-25 tools/list answer.
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
		if t["name"] == ToolWatchJob || t["name"] == ToolWaitJob {
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
	waits := p.Name == ToolWatchJob || p.Name == ToolWaitJob
	switch {
	case shape == noTask:
		return nil, nil, false
	case !waits && shape == coreTask:
		// -32601, which the specification suggests, is rewritten by the SDK
		// into a bare "method not found"; this code keeps the message.
		return nil, rpcError(mcptask.CodeInvalidParams, "%s does not run as a task; call it without the task parameter (watch_job and wait_job may run as tasks)", clip(p.Name)), true
	case !waits:
		return nil, nil, false
	}
	var id string
	if p.Name == ToolWatchJob {
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
	now := s.o.Now()
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

// toolResult is the tool's answer for op, as watch_job or wait_job give it.
func (s *server) toolResult(op *pollwarden.Operation) *sdk.CallToolResult {
	a := s.answer(op)
	b, _ := json.Marshal(a)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

// abandoned reports whether op ended by an abandon decision: it failed
// after an escalation, which the provider's own failure never does.
func abandoned(op *pollwarden.Operation) bool {
	return op.Phase == pollwarden.PhaseFailed && op.Escalation != nil && op.Reason != ""
}

// taskStatus maps a phase onto a task's status (2025-11-25 meaning).
func taskStatus(op *pollwarden.Operation) mcptask.Status {
	switch {
	case op.Phase == pollwarden.PhaseWaiting:
		return mcptask.Working
	case op.Phase == pollwarden.PhaseEscalated:
		return mcptask.InputRequired
	case op.Phase == pollwarden.PhaseSucceeded:
		return mcptask.Completed
	case op.Phase == pollwarden.PhaseCancelled, abandoned(op):
		return mcptask.Cancelled
	}
	return mcptask.Failed // failed, expired, and any phase added later
}

// extStatus is the extension's: a job that failed or expired is a tool
// result (completed), since failed is kept for JSON-RPC errors there.
func extStatus(op *pollwarden.Operation) mcptask.Status {
	if st := taskStatus(op); st != mcptask.Failed {
		return st
	}
	return mcptask.Completed
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func lastUpdated(op *pollwarden.Operation) time.Time {
	t := op.StartedAt
	for _, u := range []*time.Time{op.LastHTTPAt, op.FinishedAt} {
		if u != nil && u.After(t) {
			t = *u
		}
	}
	return t
}

// ttl follows the deadline: an approver's extension lengthens it.
func ttl(op *pollwarden.Operation) *int64 {
	ms := (op.DeadlineAt.Sub(op.StartedAt) + taskRetention).Milliseconds()
	return &ms
}

// pollInterval is the time to pollwarden's next status request (nothing
// can change before it), or a person's pace while a decision is awaited.
func pollInterval(op *pollwarden.Operation, now time.Time) *int64 {
	var d time.Duration
	switch op.Phase {
	case pollwarden.PhaseWaiting:
		d = max(op.NextPollAt.Sub(now), 0) + pollMargin
	case pollwarden.PhaseEscalated:
		d = decisionPoll
	default:
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}

// taskMessage is a task's statusMessage: what to do, which is nothing.
func taskMessage(op *pollwarden.Operation, now time.Time) string {
	switch op.Phase {
	case pollwarden.PhaseWaiting:
		next := op.NextPollAt.Sub(now).Round(time.Second)
		when := "now"
		if next > 0 {
			when = "in " + next.String() + " (" + op.NextPollAt.UTC().Format(time.RFC3339) + ")"
		}
		return fmt.Sprintf("Still waiting (last state %s). pollwarden sends the next status request %s, %s; nothing can change before then, and looking at this task costs the provider nothing. %d of %d status requests used, deadline %s. Nothing to do: look again after the poll interval.",
			orNone(op.LastState), when, because(op.NextPollSource), op.StatusRequestsUsed, op.MaxStatusRequests, op.DeadlineAt.UTC().Format(time.RFC3339))
	case pollwarden.PhaseEscalated:
		msg := fmt.Sprintf("Waiting stopped (%s) and a person must decide what happens next.", op.Reason)
		if e := op.Escalation; e != nil {
			msg += "\n" + e.Message + "\n"
		} else {
			msg += " "
		}
		return msg + fmt.Sprintf("This task takes no input from you and you cannot decide it: tell the user. An approver decides with `pollwarden decide %s OPTION` or the daemon's API; request_extension records a request for more time or requests.", op.ID)
	}
	if abandoned(op) {
		return "The wait was abandoned (" + string(op.Reason) + "); pollwarden no longer watches this job, and nothing was cancelled at the provider."
	}
	return guidance(op, now)
}

func coreTaskOf(op *pollwarden.Operation, now time.Time) mcptask.Task {
	return mcptask.Task{TaskID: op.ID, Status: taskStatus(op), StatusMessage: taskMessage(op, now),
		CreatedAt: stamp(op.StartedAt), LastUpdatedAt: stamp(lastUpdated(op)),
		TTL: ttl(op), PollInterval: pollInterval(op, now)}
}

func taskV2(op *pollwarden.Operation, now time.Time) mcptask.TaskV2 {
	return mcptask.TaskV2{TaskID: op.ID, Status: extStatus(op), StatusMessage: taskMessage(op, now),
		CreatedAt: stamp(op.StartedAt), LastUpdatedAt: stamp(lastUpdated(op)),
		TTLMs: ttl(op), PollIntervalMs: pollInterval(op, now)}
}

// task reads the operation behind a task id, from the store only.
func (s *server) task(ctx context.Context, id string) (*pollwarden.Operation, error) {
	if id == "" {
		return nil, rpcError(mcptask.CodeInvalidParams, "taskId is required: the operation_id the task was created for")
	}
	op, err := s.o.Store.OperationGet(ctx, id)
	if errors.Is(err, pollwarden.ErrNotFound) {
		return nil, rpcError(mcptask.CodeInvalidParams, "Failed to retrieve task: no task %s (task ids are operation ids; list_jobs lists them)", clip(id))
	}
	if err != nil {
		return nil, internal(err)
	}
	return op, nil
}

// tasksGet answers tasks/get from the record alone: it never sends a
// provider request, however often a host asks.
func (s *server) tasksGet(ctx context.Context, ss *sdk.ServerSession, p *taskParams) (*wire, error) {
	op, err := s.task(ctx, p.id())
	if err != nil {
		return nil, err
	}
	now := s.o.Now()
	if shapeOf(p, ss) == coreTask {
		return &wire{v: coreTaskOf(op, now)}, nil
	}
	d := mcptask.DetailedTaskV2{ResultType: mcptask.ResultTypeComplete, TaskV2: taskV2(op, now)}
	if d.Status == mcptask.Completed {
		r, err := extResult(s.toolResult(op))
		if err != nil {
			return nil, internal(err)
		}
		if d.Result, err = json.Marshal(r); err != nil {
			return nil, internal(err)
		}
	}
	return &wire{v: d}, nil
}

// tasksResult (2025-11-25) holds while the task is working, then returns
// the tool's answer. At input_required it answers at once: pollwarden
// queues no request for the client, and the answer says a person must
// decide.
func (s *server) tasksResult(ctx context.Context, _ *sdk.ServerSession, p *taskParams) (*wire, error) {
	op, err := s.task(ctx, p.id())
	if err != nil {
		return nil, err
	}
	for op.Phase == pollwarden.PhaseWaiting {
		op, err = s.o.Changes.WaitPhase(ctx, s.o.Store, op.ID, MaxWait, s.o.Recheck)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, internal(err)
		}
	}
	res := s.toolResult(op)
	res.Meta = sdk.Meta{mcptask.MetaRelatedTask: map[string]string{"taskId": op.ID}}
	return &wire{v: res}, nil
}

// tasksList (2025-11-25) lists the newest operations as tasks.
func (s *server) tasksList(ctx context.Context, _ *sdk.ServerSession, p *listTasksParams) (*wire, error) {
	if p != nil && p.Cursor != "" {
		return nil, rpcError(mcptask.CodeInvalidParams, "invalid cursor: tasks/list answers in one page")
	}
	list, err := s.o.Store.OperationList(ctx, pollwarden.ListParams{Limit: 100})
	if err != nil {
		return nil, internal(err)
	}
	now := s.o.Now()
	out := mcptask.ListTasksResult{Tasks: make([]mcptask.Task, 0, len(list))}
	for _, op := range list {
		out.Tasks = append(out.Tasks, coreTaskOf(op, now))
	}
	return &wire{v: out}, nil
}

// tasksCancel abandons the wait: pollwarden stops watching, recorded as
// the agent's decision. It narrows the agent's own authority and never
// cancels the job at the provider.
func (s *server) tasksCancel(ctx context.Context, ss *sdk.ServerSession, p *taskParams) (*wire, error) {
	op, err := s.task(ctx, p.id())
	if err != nil {
		return nil, err
	}
	if st := taskStatus(op); st.Terminal() {
		return nil, rpcError(mcptask.CodeInvalidParams, "task %s is already %s and cannot be cancelled", op.ID, st)
	}
	op, err = s.abandonWait(ctx, op)
	if err != nil {
		return nil, err
	}
	if shapeOf(p, ss) == extTask {
		return &wire{v: map[string]string{"resultType": mcptask.ResultTypeComplete}}, nil
	}
	return &wire{v: coreTaskOf(op, s.o.Now())}, nil
}

// abandonWait is the one place a task's cancel reaches the controller: an
// agent's abandon decision (it grants nothing). The controller accepts it
// on an escalated operation; a waiting one is refused with a clear error
// until abandoning a waiting operation is allowed there.
func (s *server) abandonWait(ctx context.Context, op *pollwarden.Operation) (*pollwarden.Operation, error) {
	ex, ok := s.o.Contracts.Get(op.Contract)
	if !ok {
		return nil, rpcError(mcptask.CodeInvalidParams, "operation %s's contract %s is not loaded; the wait cannot be abandoned here", op.ID, clip(op.Contract))
	}
	next, err := s.o.Controller.Decide(ctx, ex, op.ID, policy.DecisionParams{Option: pollwarden.OptionAbandon, Actor: Actor,
		Note: "the MCP task was cancelled by the client: stop watching; nothing is cancelled at the provider"})
	switch {
	case errors.Is(err, pollwarden.ErrInvalid) && op.Phase == pollwarden.PhaseWaiting:
		return nil, rpcError(mcptask.CodeInvalidParams, "task %s cannot be cancelled while its operation waits: pollwarden keeps watching it until an outcome or an escalation, after which cancelling abandons the wait", op.ID)
	case errors.Is(err, pollwarden.ErrInvalid):
		return nil, rpcError(mcptask.CodeInvalidParams, "%v", err)
	case err != nil:
		return nil, internal(err)
	}
	return next, nil
}

// tasksUpdate (extension) is refused: pollwarden asks nothing of the
// agent, and a decision is a person's, through an approver's door.
func (s *server) tasksUpdate(ctx context.Context, _ *sdk.ServerSession, p *updateTaskParams) (*wire, error) {
	id := ""
	if p != nil {
		id = p.TaskID
	}
	op, err := s.task(ctx, id)
	if err != nil {
		return nil, err
	}
	return nil, rpcError(mcptask.CodeInvalidParams, "task %s asks for no input: a person decides an escalation with `pollwarden decide %s OPTION` or the daemon's API, never through the task", op.ID, op.ID)
}
