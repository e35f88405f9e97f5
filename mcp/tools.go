package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/contract/builtin"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
)

func (s *server) watchJob(ctx context.Context, _ *sdk.CallToolRequest, in WatchJobIn) (*sdk.CallToolResult, JobAnswer, error) {
	if in.Contract == "" {
		return nil, JobAnswer{}, fmt.Errorf("contract is required; loaded contracts: %s", s.names())
	}
	ex, ok := s.o.Contracts.Get(in.Contract)
	if !ok {
		return nil, JobAnswer{}, fmt.Errorf("unknown contract %s; loaded contracts: %s; built-in: %s", clip(in.Contract), s.names(), strings.Join(builtin.Names(), ", "))
	}
	ct := ex.Contract()
	now := s.o.Clock.Now()
	p := policy.NewParams{ID: in.OperationID, ProviderJobID: in.JobID, StatusURL: in.StatusURL}
	var problems []string
	vars, varsErr := contract.OperationVars(ct, in.Vars, in.StatusURL != "")
	if varsErr != nil {
		problems = append(problems, fmt.Sprintf("vars: %v", varsErr))
	}
	p.Vars = vars
	switch {
	case (in.JobID == "") == (in.StatusURL == ""):
		problems = append(problems, "give exactly one of job_id and status_url")
	case in.JobID != "" && varsErr == nil:
		if _, err := contract.StatusURLFor(ct, in.JobID, vars); err != nil {
			problems = append(problems, fmt.Sprintf("job_id: %v", err))
		}
	case in.StatusURL != "":
		if err := contract.CheckOrigin(ct, in.StatusURL); err != nil {
			problems = append(problems, fmt.Sprintf("status_url: %v", err))
		}
	}
	if in.OperationID != "" {
		if err := pollwarden.CheckOperationID("operation_id", in.OperationID); err != nil {
			problems = append(problems, trimInvalid(err))
		}
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
		dl, err := pollwarden.ParseDeadline("deadline", in.Deadline, now)
		switch {
		case err != nil:
			problems = append(problems, trimInvalid(err))
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
	who := s.who(ctx)
	if who.remote && who.caller.Name == "" {
		return nil, JobAnswer{}, errors.New("this request carries no token: send Authorization: Bearer <token>")
	}
	if p.ID == "" {
		cred := ""
		if ct.Status.Credential != nil {
			cred = ct.Status.Credential.Ref
		}
		p.ID = pollwarden.DerivedOperationID(ct.Name, policy.FingerprintVars(ct, p.ProviderJobID, p.StatusURL, cred, p.Vars), who.derivedOwner())
	}
	p.Owner = s.owner(who)
	if who.remote { // a token is named as the creator; the stdio server is the operator's own
		actor := who.actor()
		p.By = &actor
	}
	// An id taken by an operation the caller may not see is refused
	// before Submit, whose answer (a resume, or a refusal naming the
	// stored job) would tell of that operation.
	if err := s.taken(ctx, p.ID); err != nil {
		return nil, JobAnswer{}, err
	}
	op, created, err := s.o.Controller.Submit(ctx, ex, p)
	if err == nil && !who.sees(op) {
		err = errTaken(p.ID) // created by someone else since the check
	}
	if err != nil {
		if terr := s.taken(ctx, p.ID); terr != nil {
			return nil, JobAnswer{}, terr
		}
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
	start := s.o.Clock.Now()
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
				Progress: s.o.Clock.Now().Sub(start).Seconds(), Total: d.Seconds(),
			})
		}
	}()
	return func() { cancel(); <-done }
}

func (s *server) listJobs(ctx context.Context, _ *sdk.CallToolRequest, in ListJobsIn) (*sdk.CallToolResult, ListAnswer, error) {
	var lp pollwarden.ListParams
	if in.Phase != "" {
		ph := pollwarden.Phase(in.Phase)
		if !ph.Known() {
			return nil, ListAnswer{}, fmt.Errorf("unknown phase %s; use one of waiting, cancelling, succeeded, failed, cancelled, expired, escalated, or omit it", clip(in.Phase))
		}
		lp.Phase = ph
	}
	lp.Limit = 100
	owner, ok := s.who(ctx).listOwner()
	if !ok {
		return nil, ListAnswer{Operations: []pollwarden.Outcome{}}, nil
	}
	lp.Owner = owner
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

func (s *server) requestExtension(ctx context.Context, _ *sdk.CallToolRequest, in RequestExtensionIn) (*sdk.CallToolResult, ExtensionAnswer, error) {
	ext, err := controller.ParseExtension(in.ExtraTime, in.ExtraStatusRequests, in.Justification)
	if err != nil {
		return nil, ExtensionAnswer{}, errors.New(trimInvalid(err))
	}
	if _, err := s.get(ctx, in.OperationID); err != nil {
		return nil, ExtensionAnswer{}, err
	}
	op, err := s.o.Controller.RequestExtension(ctx, in.OperationID, s.who(ctx).actor(), ext)
	switch {
	case errors.Is(err, pollwarden.ErrPhase), errors.Is(err, pollwarden.ErrInvalid):
		return nil, ExtensionAnswer{}, errors.New(trimInvalid(err))
	case err != nil:
		return nil, ExtensionAnswer{}, internal(err)
	}
	extra := ext.ExtraTime
	return nil, ExtensionAnswer{
		OperationID: op.ID, Granted: false, ExtraTime: extra.String(), ExtraStatusRequests: in.ExtraStatusRequests,
		DeadlineAt: op.DeadlineAt, MaxStatusRequests: op.MaxStatusRequests,
		Message: fmt.Sprintf("Recorded your request in the audit log of %s. Nothing was granted: the deadline (%s) and the budget (%d of %d status requests used) are unchanged. Only an approver can extend it (pollwarden decide %s extend, once it has escalated). Tell the user you asked and why.",
			op.ID, op.DeadlineAt.UTC().Format(time.RFC3339), op.StatusRequestsUsed, op.MaxStatusRequests, op.ID),
	}, nil
}
