package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/policy"
)

// orphaned is operations.NoPoller: the rule the console shows too.
func orphaned(op *pollwarden.Operation, now time.Time) (time.Duration, bool) {
	return operations.NoPoller(op, now)
}

// phaseCell is the PHASE column of `ops list`: the phase, marked when
// nothing polls the operation.
func phaseCell(op *pollwarden.Operation, now time.Time) string {
	if _, ok := orphaned(op, now); ok {
		return string(op.Phase) + " (no poller)"
	}
	return string(op.Phase)
}

// orphanHint explains an operation nothing polls and gives the commands
// that resume or end it (in the store named by storeFlag, see
// resumeCommand); nil for any other operation. current is the contract
// of op's name as it reads now (nil when it cannot be read): an edit
// since op was created is said, and whether resuming takes it up.
func orphanHint(op *pollwarden.Operation, now time.Time, storeFlag string, current *pollwarden.ContractSpec) []string {
	late, ok := orphaned(op, now)
	if !ok {
		return nil
	}
	lines := []string{
		fmt.Sprintf("%s is %s but nothing is polling it: its next check was due %s, %s ago.",
			display.Value(op.ID), op.Phase, op.NextPollAt.UTC().Format(time.RFC3339), pollwarden.ShortDuration(late.Round(time.Second))),
	}
	if current != nil {
		if ch := policy.CompareContract(op, current); ch.Changed() {
			then := "resuming refuses it: abandon this operation, or wait anew under the new contract with --operation-id and a new id"
			if op.ContractFingerprint != "" {
				then = "resuming goes on under the contract it was created with; an approver may move it to the new one with: pollwarden decide " + shellWord(op.ID) + " " + pollwarden.OptionUseCurrentContract
			}
			if ch.Adoptable {
				then = "resuming takes it up, since it only lowers limits"
				if op.ContractFingerprint != "" {
					then = "resuming with --contract takes it up, since it only lowers limits"
				}
			}
			lines = append(lines, fmt.Sprintf("  contract %s changed since it was created: %s; %s.",
				display.Value(op.Contract), display.Text(strings.Join(ch.Changes, ", ")), then))
		}
	}
	lines = append(lines, "  resume:  "+resumeCommand(op, op.Contract, storeFlag))
	if !now.Before(op.DeadlineAt) {
		lines = append(lines, "           (its deadline has passed: resuming ends it at once as deadline_exceeded, sending nothing)")
	}
	lines = append(lines, "  abandon: pollwarden decide "+shellWord(op.ID)+" abandon"+storeWords(storeFlag)+"   (stops watching; nothing is sent to the provider)")
	if op.Phase == pollwarden.PhaseWaiting && now.Before(op.DeadlineAt) {
		lines = append(lines,
			"  cancel:  pollwarden decide "+shellWord(op.ID)+" cancel_at_provider"+storeWords(storeFlag)+"   (asks the provider to cancel the job, where the contract has a cancel call)")
	}
	return lines
}

// contractsNow reads the contract of each name as it is now, once per
// name, for the orphan hint; a name that cannot be read gives nil.
func (env Env) contractsNow() func(name string) *pollwarden.ContractSpec {
	seen := map[string]*pollwarden.ContractSpec{}
	return func(name string) *pollwarden.ContractSpec {
		if c, ok := seen[name]; ok {
			return c
		}
		var c *pollwarden.ContractSpec
		if ex, err := env.loadContract(name); err == nil {
			c = ex.Spec()
		}
		seen[name] = c
		return c
	}
}
