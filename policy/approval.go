package policy

import (
	"fmt"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/present"
)

// approvalDetail says why the next status call waits for an approver:
// which call of the budget it is, for which job, and under which
// credential (its name, never the secret), so the approver knows exactly
// what one approval lets out.
func approvalDetail(op *pollwarden.Operation, c *pollwarden.ContractSpec) string {
	n := fmt.Sprintf("status request %d of %d", op.StatusRequestsUsed+1, op.MaxStatusRequests)
	if cr := c.Status.Credential; cr != nil && cr.ApproveEachCall {
		return fmt.Sprintf("%s for job %s uses credential %s, which needs an approver's approval for each call",
			n, jobText(op), cr.Ref)
	}
	return fmt.Sprintf("the status call %s is not a safe method; %s needs an approver", c.Status.Method, n)
}

// approveCallLabel is the approve_call option's text: what is approved is
// one call, named by its place in the budget.
func approveCallLabel(op *pollwarden.Operation, c *pollwarden.ContractSpec) string {
	if cr := c.Status.Credential; cr != nil && cr.ApproveEachCall {
		return fmt.Sprintf("Approve one status call with credential %s for job %s (request %d of %d)",
			cr.Ref, jobText(op), op.StatusRequestsUsed+1, op.MaxStatusRequests)
	}
	return fmt.Sprintf("Approve one %s status call (request %d of %d)", c.Status.Method, op.StatusRequestsUsed+1, op.MaxStatusRequests)
}

// jobText names the provider job for a person (present.Job).
func jobText(op *pollwarden.Operation) string { return present.Job(op) }
