package operations

import (
	"context"
	"errors"
	"maps"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/policy"
)

// contractChange judges a create whose operation id is taken by op, not
// yet finished, when the contract file of that name was edited since op
// was created: a change that only lowers limits is adopted (op goes on
// under the new file, its counters kept, the change in its story); any
// other is refused before anything is sent, saying what changed, so that
// an edited file never passes silently for the one op was created under.
// It returns op as it stands after that: adopted, or as it was.
func (s *Service) contractChange(ctx context.Context, p CreateParams, op *pollwarden.Operation, ct *pollwarden.ContractSpec) (*pollwarden.Operation, error) {
	if op.Phase.Finished() {
		return op, nil
	}
	ch := policy.CompareContract(op, ct)
	if !ch.Changed() {
		return op, nil
	}
	if !ch.Adoptable {
		return nil, changeRefusal(p, op, ct, ch.Changes, "")
	}
	adopted, err := s.ctl.AdoptContract(ctx, op.ID, ct, p.byText())
	if errors.Is(err, pollwarden.ErrLeaseHeld) || errors.Is(err, pollwarden.ErrConflict) {
		return nil, refuse(Conflict, "operation_id", "operation %s is being polled by another process right now, so the edited contract %s cannot be taken up; try again in a moment. Nothing was sent and the record is unchanged.",
			display.Value(op.ID), display.Value(ct.Name))
	}
	return adopted, err
}

// earlierOperation refuses a create that would start a new operation
// (and so a new budget) on a job an unfinished operation of the same
// contract name already watches, created under another version of the
// file: the edit changed the derived id (the status call or the
// credential), not the job. Only a derived id is checked: a caller who
// names its own id starts anew on purpose.
func (s *Service) earlierOperation(ctx context.Context, p CreateParams, np policy.NewParams, ct *pollwarden.ContractSpec) error {
	if p.OperationID != "" || p.Submit != nil || np.ProviderJobID == "" {
		return nil
	}
	// One query for the unfinished phases, so that finished operations
	// of the job, however many, never push an unfinished one out of the
	// page.
	lp := pollwarden.ListParams{Phases: []pollwarden.Phase{pollwarden.PhaseWaiting, pollwarden.PhaseEscalated, pollwarden.PhaseCancelling},
		Contract: ct.Name, ProviderJobID: np.ProviderJobID, Limit: 60}
	if !p.Caller.Local {
		lp.Owner = p.Caller.owner()
	}
	ops, err := s.store.OperationList(ctx, lp)
	if err != nil {
		return err
	}
	fp := policy.FingerprintVars(ct, np.ProviderJobID, np.StatusURL, credentialRef(ct), np.Vars)
	for _, op := range ops {
		if op.ID == np.ID || op.Phase.Finished() || !p.Caller.sees(op) || !sameVars(op.Vars, np.Vars) {
			continue
		}
		changes := policy.CompareContract(op, ct).Changes
		if len(changes) == 0 && op.Fingerprint == fp {
			continue // the same request under an id its caller chose: not an edit
		}
		if len(changes) == 0 {
			changes = []string{"the status call changed"}
		}
		return changeRefusal(p, op, ct, changes, np.ID)
	}
	return nil
}

// changeRefusal says that contract ct changed since op was created, what
// changed, op's phase and budget, and the two ways on: abandon op, or
// start anew under an id of one's own. newID is the id the request would
// have created ("" when it is op's own).
func changeRefusal(p CreateParams, op *pollwarden.Operation, ct *pollwarden.ContractSpec, changes []string, newID string) *Problems {
	start := "give " + p.name("operation_id") + " with a new id"
	if newID != "" {
		start = "give " + p.name("operation_id") + " " + display.Value(newID)
	}
	// No ID: the resume command a door offers for a refused resume would
	// name the old contract file, which is gone.
	pr := refuse(Conflict, "contract", "contract %s changed since operation %s was created for job %s (%s, %d of %d status requests used): %s. "+
		"An edited contract never gives an operation a new budget, and a running operation takes up only an edit that lowers its limits. "+
		"Abandon %s first (pollwarden decide %s abandon), or %s to wait under the new contract as a new operation%s. Nothing was sent and the record is unchanged.",
		display.Value(ct.Name), display.Value(op.ID), display.Value(jobOf(op)), op.Phase, op.StatusRequestsUsed, op.MaxStatusRequests,
		strings.Join(changes, ", "), display.Value(op.ID), op.ID, start, moveWords(op))
	return pr
}

func sameVars(a, b map[string]string) bool {
	return maps.Equal(a, b) || len(a) == 0 && len(b) == 0
}

// who names c in a line of the story: the user of a local process, or
// the token's holder.
func (c Caller) who() string {
	if c.Local {
		return c.Owner
	}
	return c.Name
}
