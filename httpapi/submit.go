package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// submitRequest is the "submit" member of POST /v1/operations: the JSON
// body pollwarden sends as the submission.
type submitRequest struct {
	Body json.RawMessage `json:"body"`
}

// submitProblems checks a create request that asks pollwarden to submit
// the job: the contract must have a submit block, and the job is not
// known yet, so neither job_id nor status_url may be given.
func submitProblems(ct *pollwarden.Contract, req createRequest) []string {
	var problems []string
	if ct.Submit == nil {
		problems = append(problems, fmt.Sprintf("contract %s has no submit block: pollwarden cannot submit its jobs (give job_id instead)", ct.Name))
	}
	if req.JobID != "" || req.StatusURL != "" {
		problems = append(problems, "submit replaces job_id and status_url: give one or the other")
	}
	b := bytes.TrimSpace(req.Submit.Body)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		problems = append(problems, "submit.body is required: the JSON body of the submission")
	}
	if ct.Submit != nil {
		vars, err := contract.SubmitVars(ct, req.Vars)
		if err == nil {
			if _, err := contract.SubmitURL(ct, vars); err != nil {
				problems = append(problems, fmt.Sprintf("submit url: %v", err))
			}
		}
	}
	return problems
}
