package cli

import (
	"fmt"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/policy"
)

// offerCurrentContract is op as `ops show` shows it: an escalated
// operation whose contract of the same name, as this process would load
// it now (POLLWARDEN_CONTRACTS, or a built-in), differs from the one it
// runs under is offered use_current_contract, with what differs, in its
// options and its message, as the API and the console offer it. The
// record is not changed: the offer is judged at each read.
func offerCurrentContract(op *pollwarden.Operation, current *pollwarden.ContractSpec) *pollwarden.Operation {
	if current == nil || op.Escalation == nil || op.Escalation.Decided != nil || op.ContractFingerprint == "" {
		return op
	}
	for _, o := range op.Escalation.Options {
		if o.ID == pollwarden.OptionUseCurrentContract {
			return op
		}
	}
	opt := policy.UseContractOption(op, current)
	if opt == nil {
		return op
	}
	next := op.Clone()
	next.Escalation.Options = append(next.Escalation.Options, *opt)
	next.Escalation.Message += fmt.Sprintf("\nThe contract %s loaded here differs from the one this operation runs under:\n  [%s] %s",
		display.Value(op.Contract), opt.ID, display.Text(opt.Label))
	return next
}
