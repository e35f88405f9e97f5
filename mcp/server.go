// Package mcp is pollwarden's Model Context Protocol door: seven tools
// (watch_job, submit_job, get_job, wait_job, list_jobs, request_extension,
// get_result) over the one operations.Service of its process, as every
// other door. An agent hands a job over once and then
// waits on it server-side; the scheduler, not the model, sends the status
// requests. No tool grants authority (R20): none raises a limit, cancels or
// resubmits, and no answer carries a credential, only its name (R27).
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
)

// MaxWait is how long one wait_job call holds by default, below the 60 s
// request timeout of the TypeScript SDK and the hosts built on it.
const MaxWait = 50 * time.Second

// MaxWaitLimit bounds max_wait_seconds: a host whose calls may last longer
// (one that resets its timeout on progress, or moves a long call to the
// background) waits a 40-minute job in a handful of calls.
const MaxWaitLimit = 600 * time.Second

// Options wires the tools to the application the process built once.
type Options struct {
	// Ops is the process's one application: every tool, the resource
	// subscriptions and the tasks go through it. Required.
	Ops *operations.Service
	// Version is reported to the client.
	Version string
	// ProgressEvery is how often wait_job sends a progress notification
	// when the client asked for them (default 15 s, as SPEC says).
	ProgressEvery time.Duration
	// Owner is recorded as the owner of the operations this server creates
	// when it is not served through NewHTTPHandler (the stdio server;
	// default "mcp"). Through NewHTTPHandler the token's name is.
	Owner string
	// TraceIncoming makes a request's _meta.traceparent the parent of its
	// spans; set it only when the controller traces, so that with tracing
	// off no caller's trace context reaches a provider.
	TraceIncoming bool
}

// Actor is who the stdio server's request_extension and watch_job record
// as asking; over the daemon's /mcp, the token's name and role are.
var Actor = pollwarden.Actor{Name: "mcp-agent", Role: pollwarden.RoleAgent}

// Tool names, fixed by the specification.
const (
	ToolWatchJob         = "watch_job"
	ToolGetJob           = "get_job"
	ToolWaitJob          = "wait_job"
	ToolListJobs         = "list_jobs"
	ToolRequestExtension = "request_extension"
)

const instructions = `pollwarden waits on external asynchronous jobs for you, under a contract that bounds time and status requests.
Flow: call watch_job ONCE per job (calling it again with the same arguments resumes the same operation), then call wait_job with the operation_id until phase is no longer "waiting". Do not poll get_job in a loop: wait_job holds server-side (50 s by default, up to 600 s with max_wait_seconds, sending progress notifications every 15 s when given a progress token) and costs no provider request.
phase "succeeded" carries the validated result; "failed" carries the provider's error; "escalated" means a person must decide (see escalation.options) - tell the user, you cannot decide it. No tool can raise a limit, cancel or resubmit a job; request_extension only records a request for an approver.
Each operation is also the resource pollwarden://operations/{operation_id} (its outcome JSON); subscribing to it brings notifications/resources/updated on every phase change.
A host with MCP tasks may run watch_job, submit_job or wait_job as a task: the task id is the operation_id, its poll interval is the time to pollwarden's next status request, and input_required means a person must decide.`

type server struct {
	o Options
	// ops runs every use case on an operation; the tools only translate.
	ops *operations.Service
	srv *sdk.Server
	ws  *watchers
}

// NewServer returns an MCP server with the five tools.
func NewServer(o Options) *sdk.Server {
	if o.Ops == nil {
		panic("mcp.NewServer: Ops is required")
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 15 * time.Second
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Owner == "" {
		o.Owner = "mcp"
	}
	s := &server{o: o, ops: o.Ops}
	s.ws = &watchers{s: s, w: map[string]*watcher{}}
	srv := sdk.NewServer(&sdk.Implementation{Name: "pollwarden", Version: o.Version},
		&sdk.ServerOptions{Instructions: instructions,
			SubscribeHandler: s.ws.subscribe, UnsubscribeHandler: s.ws.unsubscribe})
	s.srv = srv
	srv.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "operation",
		Title:       "A watched job's record",
		URITemplate: ResourceTemplate,
		MIMEType:    "application/json",
		Description: `The outcome JSON of one operation (the operation_id watch_job returned): phase, outcome, reason, result, provider_error, counters, deadline. Subscribe (resources/subscribe) to get notifications/resources/updated on every phase change, then read it: a host can wait this way without calling wait_job. Reading sends no provider request.`,
	}, s.readOperation)
	jobSchema := outputSchema[pollwarden.Outcome]()
	jobSchema.Properties["guidance"] = &jsonschema.Schema{Type: "string",
		Description: "what this answer means and what to do next"}
	jobSchema.Required = append(jobSchema.Required, "guidance")
	sdk.AddTool(srv, &sdk.Tool{
		Name:  ToolWatchJob,
		Title: "Hand a job over to pollwarden",
		Description: `Register an external asynchronous job so pollwarden polls its status for you, within the contract's deadline and status-request budget. Call it once per job, right after the provider accepted it; calling again with the same arguments resumes the same operation (counters are never reset). Give exactly one of job_id and status_url. deadline and max_status_requests may only LOWER the contract's limits; a higher value is refused (only a person can raise a limit; see request_extension). Returns the operation record; then call wait_job with its operation_id (or subscribe to the resource pollwarden://operations/{operation_id} for a notification on every phase change).
Contracts loaded at start: ` + strings.Join(o.Ops.Contracts().Names(), ", ") + ".",
		Annotations:  &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(true)},
		OutputSchema: jobSchema,
	}, textOnly(s.watchJob))
	sdk.AddTool(srv, &sdk.Tool{
		Name:         ToolSubmitJob,
		Title:        "Submit a job through pollwarden",
		Description:  `Submit a job to the provider with pollwarden's own credential, under a contract that has a submit block, then watch it like watch_job. The submission is recorded before it is sent and never sent twice without the provider's idempotency key: calling again with the same arguments resumes the same operation. If the provider's answer is lost, the job escalates for a person (look it up, or resubmit). Returns the operation record; then call wait_job with its operation_id.`,
		Annotations:  &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(true)},
		OutputSchema: jobSchema,
	}, textOnly(s.submitJob))
	sdk.AddTool(srv, &sdk.Tool{
		Name:         ToolGetJob,
		Title:        "Read a job's record",
		Description:  `Return the current record of an operation, at once. It sends no provider request. To wait for a change, use wait_job instead of calling get_job repeatedly.`,
		Annotations:  &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
		OutputSchema: jobSchema,
	}, textOnly(s.getJob))
	sdk.AddTool(srv, &sdk.Tool{
		Name:         ToolWaitJob,
		Title:        "Wait for a job's phase to change",
		Description:  `Hold until the operation's phase changes or max_wait_seconds pass (default 50, at most 600: above 50 only if your client's request timeout allows it, or resets on progress), then return the record. The wait itself sends no provider request: pollwarden's scheduler polls on the contract's schedule. If phase is still "waiting" when time runs out, the answer's guidance says when the next status request is due and why; call wait_job again. phase "escalated" means a person must decide: escalation.message and escalation.options say what; tell the user, you cannot choose an option that grants authority. Sends progress notifications while waiting when the request carries a progress token. A host that can handle resource subscriptions may instead subscribe to pollwarden://operations/{operation_id}: it is notified on every phase change.`,
		Annotations:  &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
		OutputSchema: jobSchema,
	}, textOnly(s.waitJob))
	sdk.AddTool(srv, &sdk.Tool{
		Name:         ToolListJobs,
		Title:        "List jobs",
		Description:  `List operations, newest first (at most 100), optionally only those in one phase: waiting, succeeded, failed, cancelled, expired or escalated. Sends no provider request.`,
		Annotations:  &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
		OutputSchema: outputSchema[ListAnswer](),
	}, textOnly(s.listJobs))
	sdk.AddTool(srv, &sdk.Tool{
		Name:         ToolRequestExtension,
		Title:        "Ask a person for more time or requests",
		Description:  `Record, in the operation's audit log, a request for more time and/or more status requests, with your justification, for an approver to consider. It GRANTS NOTHING: the deadline and budget stay as they are until a person decides (pollwarden decide, or the daemon's API). Use it when a job escalated on deadline_exceeded or request_budget_exhausted, or is about to, and tell the user you asked.`,
		Annotations:  &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
		OutputSchema: outputSchema[ExtensionAnswer](),
	}, textOnly(s.requestExtension))
	s.addResult(srv)
	srv.AddReceivingMiddleware(numbersMiddleware)
	s.addTasks(srv)
	if o.TraceIncoming {
		// Last, so outermost: every other middleware sees the context.
		srv.AddReceivingMiddleware(traceMiddleware)
	}
	return srv
}

func ptr[T any](v T) *T { return &v }

// textOnly refuses a call whose arguments, as they came over the wire,
// hold bytes that are not UTF-8, naming the argument. The SDK's decoding
// would turn them into U+FFFD, so an operation or job id would silently
// become one the agent never sent.
func textOnly[In, Out any](h sdk.ToolHandlerFor[In, Out]) sdk.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
		if req != nil && req.Params != nil {
			if err := pollwarden.CheckJSONText(req.Params.Arguments); err != nil {
				var none Out
				return nil, none, errors.New(pollwarden.RefusalText(err))
			}
		}
		return h(ctx, req, in)
	}
}

// outputSchema infers T's schema; json.RawMessage (result,
// provider_error) is any JSON value, published as an object schema (see
// anyValue).
func outputSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): anyValue(),
	}})
	if err != nil {
		panic(err)
	}
	describeAnyValues(s)
	return s
}

// Inputs. Unknown fields are refused by the inferred schemas.
