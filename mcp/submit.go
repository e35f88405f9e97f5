package mcp

import (
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden/operations"
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
	Priority          *int              `json:"priority,omitempty" jsonschema:"when a shared quota is what limits: 5 by default, up to 9 (least urgent); you may only lower it (a larger number), never below 5"`
}

// submitJob is watch_job for a job pollwarden submits itself, through
// the same controller function as the CLI and the API.
func (s *server) submitJob(ctx context.Context, _ *sdk.CallToolRequest, in SubmitJobIn) (*sdk.CallToolResult, JobAnswer, error) {
	sub := &operations.SubmitParams{}
	if in.Body != nil {
		if b, err := json.Marshal(in.Body); err == nil {
			sub.Body = b
		}
	}
	op, _, err := s.ops.Create(ctx, operations.CreateParams{Caller: s.who(ctx), Door: "MCP submit_job", CreateRequest: operations.CreateRequest{
		OperationID: in.OperationID, Contract: in.Contract, Vars: in.Vars, Deadline: in.Deadline,
		MaxStatusRequests: in.MaxStatusRequests, Priority: in.Priority, Submit: sub}, Names: map[string]string{"submit.body": "body"}})
	if err != nil {
		return nil, JobAnswer{}, toolError(err)
	}
	a := s.answer(op)
	a.Guidance = "Submitted as " + op.ID + " (a repeated call resumes it and never submits twice). " + a.Guidance
	return nil, a, nil
}
