package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/operations"
)

func (s *server) watchJob(ctx context.Context, _ *sdk.CallToolRequest, in WatchJobIn) (*sdk.CallToolResult, JobAnswer, error) {
	op, created, err := s.ops.Create(ctx, operations.CreateParams{Caller: s.who(ctx), Door: "MCP watch_job", CreateRequest: operations.CreateRequest{
		OperationID: in.OperationID, Contract: in.Contract, JobID: in.JobID, StatusURL: in.StatusURL, Vars: in.Vars,
		Deadline: in.Deadline, MaxStatusRequests: in.MaxStatusRequests, Priority: in.Priority}})
	if err != nil {
		return nil, JobAnswer{}, toolError(err)
	}
	a := s.answerFor(ctx, op)
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
	return nil, s.answerFor(ctx, op), nil
}

func (s *server) waitJob(ctx context.Context, req *sdk.CallToolRequest, in WaitJobIn) (*sdk.CallToolResult, JobAnswer, error) {
	d := MaxWait
	if in.MaxWaitSeconds != nil {
		n := *in.MaxWaitSeconds
		if n < 1 || n > int(MaxWaitLimit/time.Second) {
			return nil, JobAnswer{}, fmt.Errorf("max_wait_seconds must be between 1 and %d, got %d; call wait_job again to wait longer", int(MaxWaitLimit/time.Second), n)
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
	op, err := s.ops.Wait(ctx, operations.WaitParams{Caller: s.who(ctx), ID: in.OperationID, For: d})
	if err != nil {
		if ctx.Err() != nil {
			return nil, JobAnswer{}, errors.New("the wait was cancelled by the client; the job is still watched; call wait_job again")
		}
		return nil, JobAnswer{}, toolError(err)
	}
	return nil, s.answerFor(ctx, op), nil
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
	start := s.ops.Clock().Now()
	go func() {
		defer close(done)
		t, ticks := s.ops.Clock().NewTicker(s.o.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticks:
			}
			msg := "waiting for " + id
			if op, err := s.ops.Get(ctx, s.who(ctx), id); err == nil {
				msg = fmt.Sprintf("%s: phase %s, %d of %d status requests used", id, op.Phase, op.StatusRequestsUsed, op.MaxStatusRequests)
				if op.LastState != "" {
					msg += ", last state " + op.LastState
				}
			}
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
				ProgressToken: tok, Message: msg,
				Progress: s.ops.Clock().Now().Sub(start).Seconds(), Total: d.Seconds(),
			})
		}
	}()
	return func() { cancel(); <-done }
}

func (s *server) listJobs(ctx context.Context, _ *sdk.CallToolRequest, in ListJobsIn) (*sdk.CallToolResult, ListAnswer, error) {
	list, err := s.ops.List(ctx, operations.ListParams{Caller: s.who(ctx), Phase: in.Phase})
	if err != nil {
		return nil, ListAnswer{}, toolError(err)
	}
	a := ListAnswer{Operations: make([]pollwarden.Outcome, 0, len(list))}
	for _, op := range list {
		a.Operations = append(a.Operations, s.who(ctx).Outcome(op))
	}
	return nil, a, nil
}

func (s *server) requestExtension(ctx context.Context, _ *sdk.CallToolRequest, in RequestExtensionIn) (*sdk.CallToolResult, ExtensionAnswer, error) {
	op, ext, err := s.ops.RequestExtension(ctx, operations.ExtensionParams{Caller: s.who(ctx), ID: in.OperationID,
		ExtraTime: in.ExtraTime, ExtraStatusRequests: in.ExtraStatusRequests, Justification: in.Justification})
	if err != nil {
		return nil, ExtensionAnswer{}, toolError(err)
	}
	return nil, ExtensionAnswer{
		OperationID: op.ID, Granted: false, ExtraTime: ext.ExtraTime.String(), ExtraStatusRequests: in.ExtraStatusRequests,
		DeadlineAt: op.DeadlineAt, MaxStatusRequests: op.MaxStatusRequests,
		Message: fmt.Sprintf("Recorded your request in the audit log of %s. Nothing was granted: the deadline (%s) and the budget (%d of %d status requests used) are unchanged. Only an approver can extend it: the extend option offers what you asked, within what the contract allows (pollwarden decide %s extend%s). Tell the user you asked and why.",
			op.ID, op.DeadlineAt.UTC().Format(time.RFC3339), op.StatusRequestsUsed, op.MaxStatusRequests, op.ID, whenEscalated(op)),
	}, nil
}

// whenEscalated says when the extend option can be chosen: now, on an
// operation awaiting a decision; once it has escalated, otherwise.
func whenEscalated(op *pollwarden.Operation) string {
	if op.Phase == pollwarden.PhaseEscalated {
		return "; it awaits that decision now"
	}
	return ", once it has escalated"
}

// numberArgs are the integer arguments of each tool. Models (and the MCP
// Inspector's CLI) often send them as strings ("500").
var numberArgs = map[string][]string{
	ToolWatchJob:         {"max_status_requests", "priority"},
	ToolSubmitJob:        {"max_status_requests", "priority"},
	ToolWaitJob:          {"max_wait_seconds"},
	ToolRequestExtension: {"extra_status_requests"},
}

// numbersMiddleware takes a whole number sent as a JSON string ("500")
// as that number, and refuses any other string in words a model can act
// on ("max_status_requests must be a number"), before the SDK's schema
// check would refuse it in its own terms. The published schemas still
// say integer.
func numbersMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		ctr, ok := req.(*sdk.CallToolRequest)
		if method != "tools/call" || !ok || ctr.Params == nil || len(numberArgs[ctr.Params.Name]) == 0 {
			return next(ctx, method, req)
		}
		var args map[string]json.RawMessage
		if json.Unmarshal(ctr.Params.Arguments, &args) != nil {
			return next(ctx, method, req)
		}
		changed := false
		for _, name := range numberArgs[ctr.Params.Name] {
			var s string
			if json.Unmarshal(args[name], &s) != nil {
				continue // absent, or not a string: the schema judges it
			}
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				msg := fmt.Sprintf("%s must be a number (a whole number such as 5), got %s", name, strconv.Quote(display.Clip(s)))
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}, nil
			}
			args[name] = json.RawMessage(strconv.FormatInt(n, 10))
			changed = true
		}
		if changed {
			b, err := json.Marshal(args)
			if err != nil {
				return nil, err
			}
			ctr.Params.Arguments = b
		}
		return next(ctx, method, req)
	}
}
