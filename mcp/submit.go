package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/contract/builtin"
	"github.com/pollwarden/pollwarden/policy"
)

// ToolSubmitJob submits a job under the contract's submit block.
const ToolSubmitJob = "submit_job"

// SubmitJobIn is submit_job's input.
type SubmitJobIn struct {
	Contract          string            `json:"contract" jsonschema:"name of a loaded contract with a submit block"`
	Body              any               `json:"body" jsonschema:"the JSON body of the submission, sent as it is with pollwarden's credential"`
	OperationID       string            `json:"operation_id,omitempty" jsonschema:"your id for this job; omit it to get one derived from the contract, body and vars, so a repeated call resumes and never submits twice"`
	Vars              map[string]string `json:"vars,omitempty" jsonschema:"values for the variables the contract declares"`
	Deadline          string            `json:"deadline,omitempty" jsonschema:"a duration from now (40m) or an RFC 3339 time; may only lower the contract's deadline"`
	MaxStatusRequests *int              `json:"max_status_requests,omitempty" jsonschema:"at least 1; may only lower the contract's budget"`
}

// submitJob is watch_job for a job pollwarden submits itself, through
// the same controller function as the CLI and the API.
func (s *server) submitJob(ctx context.Context, _ *sdk.CallToolRequest, in SubmitJobIn) (*sdk.CallToolResult, JobAnswer, error) {
	ex, ok := s.o.Contracts.Get(in.Contract)
	if !ok {
		return nil, JobAnswer{}, fmt.Errorf("unknown contract %s; loaded contracts: %s; built-in: %s", clip(in.Contract), s.names(), strings.Join(builtin.Names(), ", "))
	}
	ct := ex.Contract()
	var problems []string
	if ct.Submit == nil {
		problems = append(problems, fmt.Sprintf("contract %s has no submit block: pollwarden cannot submit its jobs (use watch_job with the job id)", ct.Name))
	}
	body, err := json.Marshal(in.Body)
	if in.Body == nil || err != nil {
		problems = append(problems, "body is required: the JSON body of the submission")
	}
	p := policy.NewParams{ID: in.OperationID}
	vars, err := contract.SubmitVars(ct, in.Vars)
	if err != nil {
		problems = append(problems, fmt.Sprintf("vars: %v", err))
	} else if ct.Submit != nil {
		if _, err := contract.SubmitURL(ct, vars); err != nil {
			problems = append(problems, fmt.Sprintf("submit url: %v", err))
		}
	}
	p.Vars = vars
	if in.OperationID != "" {
		if err := pollwarden.CheckOperationID("operation_id", in.OperationID); err != nil {
			problems = append(problems, strings.TrimPrefix(err.Error(), pollwarden.ErrInvalid.Error()+": "))
		}
	}
	if in.MaxStatusRequests != nil {
		if *in.MaxStatusRequests < 1 {
			problems = append(problems, fmt.Sprintf("max_status_requests must be at least 1, got %d", *in.MaxStatusRequests))
		}
		p.MaxStatusRequests = *in.MaxStatusRequests
	}
	if in.Deadline != "" {
		dl, err := pollwarden.ParseDeadline("deadline", in.Deadline, s.o.Clock.Now())
		if err != nil {
			problems = append(problems, err.Error())
		}
		p.Deadline = dl
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
		p.ID = pollwarden.DerivedOperationID(ct.Name, policy.SubmitFingerprint(ct, policy.BodyDigest(body), cred, p.Vars), who.derivedOwner())
	}
	p.Owner = s.owner(who)
	if who.remote {
		actor := who.actor()
		p.By = &actor
	}
	if err := s.taken(ctx, p.ID); err != nil {
		return nil, JobAnswer{}, err
	}
	op, err := s.o.Controller.SubmitJob(ctx, ex, p, body)
	if err == nil && !who.sees(op) {
		err = errTaken(p.ID)
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
	a.Guidance = "Submitted as " + op.ID + " (a repeated call resumes it and never submits twice). " + a.Guidance
	return nil, a, nil
}
