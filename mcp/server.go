// Package mcp is pollwarden's Model Context Protocol door: five tools
// (watch_job, get_job, wait_job, list_jobs, request_extension) over the
// same controller the daemon uses. An agent hands a job over once and then
// waits on it server-side; the scheduler, not the model, sends the status
// requests. No tool grants authority (R20): none raises a limit, cancels or
// resubmits, and no answer carries a credential, only its name (R27).
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/httpapi"
	"github.com/pollwarden/pollwarden/policy"
)

// MaxWait bounds one wait_job call, below the ~60 s request timeout of
// common MCP clients.
const MaxWait = 50 * time.Second

// Options wires the tools to the core. Changes must be fed by the
// controller's OnChange, so that wait_job answers as soon as a phase
// changes.
type Options struct {
	Controller *controller.Controller
	Store      pollwarden.Store
	Contracts  *contract.Set
	Changes    *httpapi.Changes
	// CredentialAvailable, when set, refuses watch_job for a contract
	// whose credential this process cannot find (naming it, never its value).
	CredentialAvailable func(*pollwarden.Contract) error
	// CredentialHint follows CredentialAvailable's error: where to set the
	// credential (default: the MCP host's "env" for this stdio server).
	CredentialHint string
	// Now defaults to time.Now.
	Now func() time.Time
	// Version is reported to the client.
	Version string
	// ProgressEvery is how often wait_job sends a progress notification
	// when the client asked for them (default 5 s).
	ProgressEvery time.Duration
	// Recheck is how often wait_job re-reads the store besides the change
	// signals (default 1 s).
	Recheck time.Duration
}

// Actor is who request_extension records as asking.
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
Flow: call watch_job ONCE per job (calling it again with the same arguments resumes the same operation), then call wait_job with the operation_id until phase is no longer "waiting". Do not poll get_job in a loop: wait_job holds server-side for up to 50 s and costs no provider request.
phase "succeeded" carries the validated result; "failed" carries the provider's error; "escalated" means a person must decide (see escalation.options) - tell the user, you cannot decide it. No tool can raise a limit, cancel or resubmit a job; request_extension only records a request for an approver.
Each operation is also the resource pollwarden://operations/{operation_id} (its outcome JSON); subscribing to it brings notifications/resources/updated on every phase change.`

type server struct {
	o   Options
	srv *sdk.Server
	ws  *watchers
}

// NewServer returns an MCP server with the five tools.
func NewServer(o Options) *sdk.Server {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 5 * time.Second
	}
	if o.Recheck <= 0 {
		o.Recheck = time.Second
	}
	if o.CredentialHint == "" {
		o.CredentialHint = `in the environment of the pollwarden mcp server; add it to the "env" of this server in the MCP host's configuration and restart it`
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := &server{o: o}
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
Contracts loaded at start: ` + strings.Join(o.Contracts.Names(), ", ") + ".",
		Annotations:  &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(true)},
		OutputSchema: jobSchema,
	}, s.watchJob)
	sdk.AddTool(srv, &sdk.Tool{
		Name:         ToolGetJob,
		Title:        "Read a job's record",
		Description:  `Return the current record of an operation, at once. It sends no provider request. To wait for a change, use wait_job instead of calling get_job repeatedly.`,
		Annotations:  &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
		OutputSchema: jobSchema,
	}, s.getJob)
	sdk.AddTool(srv, &sdk.Tool{
		Name:         ToolWaitJob,
		Title:        "Wait for a job's phase to change",
		Description:  `Hold until the operation's phase changes or max_wait_seconds pass (default and maximum 50), then return the record. The wait itself sends no provider request: pollwarden's scheduler polls on the contract's schedule. If phase is still "waiting" when time runs out, the answer's guidance says when the next status request is due and why; call wait_job again. phase "escalated" means a person must decide: escalation.message and escalation.options say what; tell the user, you cannot choose an option that grants authority. Sends progress notifications while waiting when the request carries a progress token. A host that can handle resource subscriptions may instead subscribe to pollwarden://operations/{operation_id}: it is notified on every phase change.`,
		Annotations:  &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
		OutputSchema: jobSchema,
	}, s.waitJob)
	sdk.AddTool(srv, &sdk.Tool{
		Name:         ToolListJobs,
		Title:        "List jobs",
		Description:  `List operations, newest first (at most 100), optionally only those in one phase: waiting, succeeded, failed, cancelled, expired or escalated. Sends no provider request.`,
		Annotations:  &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
		OutputSchema: outputSchema[ListAnswer](),
	}, s.listJobs)
	sdk.AddTool(srv, &sdk.Tool{
		Name:         ToolRequestExtension,
		Title:        "Ask a person for more time or requests",
		Description:  `Record, in the operation's audit log, a request for more time and/or more status requests, with your justification, for an approver to consider. It GRANTS NOTHING: the deadline and budget stay as they are until a person decides (pollwarden decide, or the daemon's API). Use it when a job escalated on deadline_exceeded or request_budget_exhausted, or is about to, and tell the user you asked.`,
		Annotations:  &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
		OutputSchema: outputSchema[ExtensionAnswer](),
	}, s.requestExtension)
	return srv
}

func ptr[T any](v T) *T { return &v }

// outputSchema infers T's schema; json.RawMessage (result,
// provider_error) is any JSON value.
func outputSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {},
	}})
	if err != nil {
		panic(err)
	}
	return s
}

// Inputs. Unknown fields are refused by the inferred schemas.

// WatchJobIn is watch_job's input.
type WatchJobIn struct {
	Contract          string `json:"contract" jsonschema:"name of a loaded contract (see this tool's description)"`
	JobID             string `json:"job_id,omitempty" jsonschema:"the provider's job id; give this or status_url"`
	StatusURL         string `json:"status_url,omitempty" jsonschema:"the job's status URL as the provider returned it; its host must be allowed by the contract; give this or job_id"`
	OperationID       string `json:"operation_id,omitempty" jsonschema:"your id for this wait; omit it to get one derived from the contract and job, so a repeated call resumes"`
	Deadline          string `json:"deadline,omitempty" jsonschema:"a duration from now (40m) or an RFC 3339 time; may only lower the contract's deadline"`
	MaxStatusRequests *int   `json:"max_status_requests,omitempty" jsonschema:"at least 1; may only lower the contract's budget"`
}

// OperationIn names one operation.
type OperationIn struct {
	OperationID string `json:"operation_id" jsonschema:"the operation_id returned by watch_job"`
}

// WaitJobIn is wait_job's input.
type WaitJobIn struct {
	OperationID    string `json:"operation_id" jsonschema:"the operation_id returned by watch_job"`
	MaxWaitSeconds *int   `json:"max_wait_seconds,omitempty" jsonschema:"how long to hold, 1 to 50 (default 50)"`
}

// ListJobsIn is list_jobs' input.
type ListJobsIn struct {
	Phase string `json:"phase,omitempty" jsonschema:"only operations in this phase: waiting, succeeded, failed, cancelled, expired or escalated"`
}

// RequestExtensionIn is request_extension's input.
type RequestExtensionIn struct {
	OperationID         string `json:"operation_id" jsonschema:"the operation_id returned by watch_job"`
	ExtraTime           string `json:"extra_time" jsonschema:"more time asked for, as a duration (15m); 0s for none"`
	ExtraStatusRequests int    `json:"extra_status_requests" jsonschema:"more status requests asked for; 0 for none"`
	Justification       string `json:"justification" jsonschema:"why, for the person who decides"`
}

// Answers.

// JobAnswer is the operation record with the outcome field names, and
// guidance on what to do next, as one flat JSON object.
type JobAnswer struct {
	Outcome pollwarden.Outcome
	// Guidance says, in words, what the phase means for the caller.
	Guidance string
}

// MarshalJSON flattens the answer: the outcome's fields and "guidance".
func (a JobAnswer) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(a.Outcome)
	if err != nil {
		return nil, err
	}
	g, err := json.Marshal(a.Guidance)
	if err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], `,"guidance":`...)
	return append(append(b, g...), '}'), nil
}

// ListAnswer is list_jobs' answer.
type ListAnswer struct {
	Operations []pollwarden.Outcome `json:"operations"`
}

// ExtensionAnswer is request_extension's answer.
type ExtensionAnswer struct {
	OperationID         string `json:"operation_id"`
	Granted             bool   `json:"granted" jsonschema:"always false: an agent's request grants nothing"`
	ExtraTime           string `json:"extra_time"`
	ExtraStatusRequests int    `json:"extra_status_requests"`
	// The limits as they stand, unchanged by the request.
	DeadlineAt        time.Time `json:"deadline_at"`
	MaxStatusRequests int       `json:"max_status_requests"`
	Message           string    `json:"message"`
}

var validID = regexp.MustCompile(`^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,127}$`)

func (s *server) watchJob(ctx context.Context, _ *sdk.CallToolRequest, in WatchJobIn) (*sdk.CallToolResult, JobAnswer, error) {
	if in.Contract == "" {
		return nil, JobAnswer{}, fmt.Errorf("contract is required; loaded contracts: %s", s.names())
	}
	ex, ok := s.o.Contracts.Get(in.Contract)
	if !ok {
		return nil, JobAnswer{}, fmt.Errorf("unknown contract %s; loaded contracts: %s", clip(in.Contract), s.names())
	}
	ct := ex.Contract()
	now := s.o.Now()
	p := policy.NewParams{ID: in.OperationID, ProviderJobID: in.JobID, StatusURL: in.StatusURL}
	var problems []string
	switch {
	case (in.JobID == "") == (in.StatusURL == ""):
		problems = append(problems, "give exactly one of job_id and status_url")
	case in.JobID != "":
		if _, err := contract.StatusURL(ct, in.JobID); err != nil {
			problems = append(problems, fmt.Sprintf("job_id: %v", err))
		}
	default:
		if err := contract.CheckHost(ct, in.StatusURL); err != nil {
			problems = append(problems, fmt.Sprintf("status_url: %v", err))
		}
	}
	if in.OperationID != "" && !validID.MatchString(in.OperationID) {
		problems = append(problems, fmt.Sprintf("operation_id %s: use 1 to 128 letters, digits, '-', '_', '.' or '~', or omit it", clip(in.OperationID)))
	}
	if in.MaxStatusRequests != nil {
		if *in.MaxStatusRequests < 1 {
			problems = append(problems, fmt.Sprintf("max_status_requests must be at least 1, got %d", *in.MaxStatusRequests))
		} else if *in.MaxStatusRequests > ct.Limits.MaxStatusRequests {
			problems = append(problems, fmt.Sprintf("max_status_requests %d is above contract %s's %d; an agent may only lower it (omit it for the contract's budget); only a person can raise a limit, after the job escalates: call request_extension to ask",
				*in.MaxStatusRequests, ct.Name, ct.Limits.MaxStatusRequests))
		} else {
			p.MaxStatusRequests = *in.MaxStatusRequests
		}
	}
	if in.Deadline != "" {
		dl, err := parseDeadline(in.Deadline, now)
		switch {
		case err != nil:
			problems = append(problems, err.Error())
		case dl.After(now.Add(ct.Limits.Deadline)):
			problems = append(problems, fmt.Sprintf("deadline %s is later than contract %s's deadline of %s from now; an agent may only lower it (omit it for the contract's); only a person can raise a limit: call request_extension to ask",
				clip(in.Deadline), ct.Name, ct.Limits.Deadline))
		default:
			p.Deadline = dl
		}
	}
	if len(problems) > 0 {
		return nil, JobAnswer{}, errors.New(strings.Join(problems, "; "))
	}
	if s.o.CredentialAvailable != nil {
		if err := s.o.CredentialAvailable(ct); err != nil {
			return nil, JobAnswer{}, fmt.Errorf("%v %s", err, s.o.CredentialHint)
		}
	}
	if p.ID == "" {
		cred := ""
		if ct.Status.Credential != nil {
			cred = ct.Status.Credential.Ref
		}
		p.ID = ct.Name + "-" + policy.Fingerprint(ct, p.ProviderJobID, p.StatusURL, cred)[:12]
	}
	op, created, err := s.o.Controller.Submit(ctx, ex, p)
	if err != nil {
		if errors.Is(err, pollwarden.ErrInvalid) {
			return nil, JobAnswer{}, errors.New(strings.TrimPrefix(err.Error(), pollwarden.ErrInvalid.Error()+": "))
		}
		return nil, JobAnswer{}, internal(err)
	}
	a := s.answer(op)
	if created {
		a.Guidance = "Registered as " + op.ID + ". " + a.Guidance
	} else {
		a.Guidance = "Resumed the existing operation " + op.ID + " (counters kept). " + a.Guidance
	}
	return nil, a, nil
}

func (s *server) getJob(ctx context.Context, _ *sdk.CallToolRequest, in OperationIn) (*sdk.CallToolResult, JobAnswer, error) {
	op, err := s.get(ctx, in.OperationID)
	if err != nil {
		return nil, JobAnswer{}, err
	}
	return nil, s.answer(op), nil
}

func (s *server) waitJob(ctx context.Context, req *sdk.CallToolRequest, in WaitJobIn) (*sdk.CallToolResult, JobAnswer, error) {
	d := MaxWait
	if in.MaxWaitSeconds != nil {
		n := *in.MaxWaitSeconds
		if n < 1 || n > int(MaxWait/time.Second) {
			return nil, JobAnswer{}, fmt.Errorf("max_wait_seconds must be between 1 and %d, got %d; call wait_job again to wait longer", int(MaxWait/time.Second), n)
		}
		d = time.Duration(n) * time.Second
	}
	if _, err := s.get(ctx, in.OperationID); err != nil {
		return nil, JobAnswer{}, err
	}
	if tok := progressToken(req); tok != nil {
		stop := s.progress(ctx, req, tok, in.OperationID, d)
		defer stop()
	}
	op, err := s.o.Changes.WaitPhase(ctx, s.o.Store, in.OperationID, d, s.o.Recheck)
	if err != nil {
		if ctx.Err() != nil {
			return nil, JobAnswer{}, errors.New("the wait was cancelled by the client; the job is still watched; call wait_job again")
		}
		return nil, JobAnswer{}, internal(err)
	}
	return nil, s.answer(op), nil
}

func progressToken(req *sdk.CallToolRequest) any {
	if req == nil || req.Params == nil {
		return nil
	}
	return req.Params.GetProgressToken()
}

// progress sends a notification every ProgressEvery until stopped, so a
// client that resets its timeout on progress keeps the call open.
func (s *server) progress(ctx context.Context, req *sdk.CallToolRequest, tok any, id string, d time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		t := time.NewTicker(s.o.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			msg := "waiting for " + id
			if op, err := s.o.Store.OperationGet(ctx, id); err == nil {
				msg = fmt.Sprintf("%s: phase %s, %d of %d status requests used", id, op.Phase, op.StatusRequestsUsed, op.MaxStatusRequests)
				if op.LastState != "" {
					msg += ", last state " + op.LastState
				}
			}
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
				ProgressToken: tok, Message: msg,
				Progress: time.Since(start).Seconds(), Total: d.Seconds(),
			})
		}
	}()
	return func() { cancel(); <-done }
}

func (s *server) listJobs(ctx context.Context, _ *sdk.CallToolRequest, in ListJobsIn) (*sdk.CallToolResult, ListAnswer, error) {
	var lp pollwarden.ListParams
	if in.Phase != "" {
		ph := pollwarden.Phase(in.Phase)
		if !knownPhase(ph) {
			return nil, ListAnswer{}, fmt.Errorf("unknown phase %s; use one of waiting, succeeded, failed, cancelled, expired, escalated, or omit it", clip(in.Phase))
		}
		lp.Phase = ph
	}
	lp.Limit = 100
	list, err := s.o.Store.OperationList(ctx, lp)
	if err != nil {
		return nil, ListAnswer{}, internal(err)
	}
	a := ListAnswer{Operations: make([]pollwarden.Outcome, 0, len(list))}
	for _, op := range list {
		a.Operations = append(a.Operations, pollwarden.OutcomeOf(op))
	}
	return nil, a, nil
}

func knownPhase(p pollwarden.Phase) bool {
	switch p {
	case pollwarden.PhaseWaiting, pollwarden.PhaseSucceeded, pollwarden.PhaseFailed,
		pollwarden.PhaseCancelled, pollwarden.PhaseExpired, pollwarden.PhaseEscalated:
		return true
	}
	return false
}

func (s *server) requestExtension(ctx context.Context, _ *sdk.CallToolRequest, in RequestExtensionIn) (*sdk.CallToolResult, ExtensionAnswer, error) {
	var problems []string
	extra, err := time.ParseDuration(in.ExtraTime)
	if err != nil || extra < 0 {
		problems = append(problems, fmt.Sprintf("extra_time %s must be a non-negative duration such as 15m or 0s", clip(in.ExtraTime)))
	}
	if in.ExtraStatusRequests < 0 {
		problems = append(problems, fmt.Sprintf("extra_status_requests must be 0 or more, got %d", in.ExtraStatusRequests))
	}
	if err == nil && extra == 0 && in.ExtraStatusRequests == 0 {
		problems = append(problems, "ask for some extra_time or some extra_status_requests")
	}
	if strings.TrimSpace(in.Justification) == "" {
		problems = append(problems, "justification is required: say why, for the person who decides")
	}
	if len(problems) > 0 {
		return nil, ExtensionAnswer{}, errors.New(strings.Join(problems, "; "))
	}
	if _, err := s.get(ctx, in.OperationID); err != nil {
		return nil, ExtensionAnswer{}, err
	}
	op, err := s.o.Controller.RequestExtension(ctx, in.OperationID, Actor,
		controller.ExtensionRequest{ExtraTime: extra, ExtraStatusRequests: in.ExtraStatusRequests, Justification: in.Justification})
	if err != nil {
		return nil, ExtensionAnswer{}, internal(err)
	}
	return nil, ExtensionAnswer{
		OperationID: op.ID, Granted: false, ExtraTime: extra.String(), ExtraStatusRequests: in.ExtraStatusRequests,
		DeadlineAt: op.DeadlineAt, MaxStatusRequests: op.MaxStatusRequests,
		Message: fmt.Sprintf("Recorded your request in the audit log of %s. Nothing was granted: the deadline (%s) and the budget (%d of %d status requests used) are unchanged. Only an approver can extend it (pollwarden decide %s extend, once it has escalated). Tell the user you asked and why.",
			op.ID, op.DeadlineAt.UTC().Format(time.RFC3339), op.StatusRequestsUsed, op.MaxStatusRequests, op.ID),
	}, nil
}

func (s *server) get(ctx context.Context, id string) (*pollwarden.Operation, error) {
	if id == "" {
		return nil, errors.New("operation_id is required: the one watch_job returned (list_jobs lists them)")
	}
	op, err := s.o.Store.OperationGet(ctx, id)
	if errors.Is(err, pollwarden.ErrNotFound) {
		return nil, fmt.Errorf("no operation %s; register the job with watch_job first (list_jobs lists the known ones)", clip(id))
	}
	if err != nil {
		return nil, internal(err)
	}
	return op, nil
}

// answer is the record with guidance in words.
func (s *server) answer(op *pollwarden.Operation) JobAnswer {
	return JobAnswer{Outcome: pollwarden.OutcomeOf(op), Guidance: guidance(op, s.o.Now())}
}

func guidance(op *pollwarden.Operation, now time.Time) string {
	switch op.Phase {
	case pollwarden.PhaseWaiting:
		next := op.NextPollAt.Sub(now).Round(time.Second)
		when := "now"
		if next > 0 {
			when = "in " + next.String() + " (" + op.NextPollAt.UTC().Format(time.RFC3339) + ")"
		}
		return fmt.Sprintf("Still waiting (last state %s). The next status request is due %s, %s; %d of %d status requests used, deadline %s. Nothing changes before then: call wait_job again, it holds until the phase changes.",
			orNone(op.LastState), when, because(op.NextPollSource), op.StatusRequestsUsed, op.MaxStatusRequests, op.DeadlineAt.UTC().Format(time.RFC3339))
	case pollwarden.PhaseSucceeded:
		return "The job succeeded; its validated result is in result."
	case pollwarden.PhaseFailed:
		return "The provider reported that the job failed; its error is in provider_error. Do not resubmit on your own: tell the user."
	case pollwarden.PhaseCancelled:
		return "The job was cancelled."
	case pollwarden.PhaseExpired:
		return "The job expired at the provider."
	case pollwarden.PhaseEscalated:
		msg := fmt.Sprintf("Waiting stopped (%s) and a person must decide what happens next", op.Reason)
		if e := op.Escalation; e != nil {
			var opts []string
			for _, o := range e.Options {
				opts = append(opts, o.Label)
			}
			msg += ": " + e.Message
			if len(opts) > 0 {
				msg += " Options for the approver: " + strings.Join(opts, "; ") + "."
			}
		}
		return msg + " You cannot choose an option that grants authority: tell the user; request_extension records a request for more time or requests."
	}
	return ""
}

func because(src pollwarden.DelaySource) string {
	switch src {
	case pollwarden.DelayRetryAfter:
		return "as the provider asked (Retry-After)"
	case pollwarden.DelayPollHint:
		return "as the provider's poll hint suggests"
	case pollwarden.DelayManualExtension:
		return "after an approver's extension"
	}
	return "on the contract's backoff schedule"
}

func orNone(s string) string {
	if s == "" {
		return "none yet"
	}
	return s
}

func (s *server) names() string {
	n := s.o.Contracts.Names()
	if len(n) == 0 {
		return "(none)"
	}
	return strings.Join(n, ", ")
}

// internal hides a store error's detail behind a stable message; store
// errors never carry secrets, but they are not actionable for a model.
func internal(err error) error {
	return fmt.Errorf("internal error in pollwarden (%v); try again, and tell the user if it persists", err)
}

// parseDeadline accepts a positive duration from now or a future RFC 3339
// time, as watch_job's deadline.
func parseDeadline(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("deadline %s must be positive", clip(v))
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("deadline %s is neither a duration (40m) nor an RFC 3339 time", clip(v))
	}
	if !t.After(now) {
		return time.Time{}, fmt.Errorf("deadline %s is not in the future", clip(v))
	}
	return t, nil
}

func clip(s string) string {
	const max = 80
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return fmt.Sprintf("%q", s)
}
