package cli

import (
	"errors"
	"fmt"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/tokens"
	"github.com/spf13/cobra"
)

func decideCmd(env Env) *cobra.Command {
	var store, contractArg, by, note, auditKey, escalation string
	cmd := &cobra.Command{
		Use:   "decide OPERATION OPTION",
		Short: "Answer an escalation with one of its options, or cancel at the provider, as an approver",
		Long: `decide records an approver's answer to an escalated operation: who, when,
the state at the time, the calls already made and the new limits. Whoever
can write the store file acts as an approver here; the daemon's API is the
door with per-person roles. An extension adds time and requests and never
resets a counter; waiting resumes with the next 'pollwarden wait'.

cancel_at_provider may also be chosen for a waiting operation at any time.
The cancel is recorded (phase cancelling) before it is sent, is sent once,
and the operation then keeps observing until the provider reports an end
state. A second cancel sends nothing unless the contract documents cancel
as idempotent.

--escalation ID names the question answered (escalation.id, as ops show
and --json print it): when it is no longer the open one (already decided,
or replaced by a newer question) the decision is refused with exit 2 and
nothing changes. Without it the open question is answered.

retry_credential is accepted only after authorization_denied, when the
credential the operation would send now (read in this process's
environment) differs from the refused one; it allows one status request,
sent by the next 'pollwarden wait'. With the same credential it is
refused (exit 2).

The decision uses the contract the operation runs under, as the store
keeps it: no contract file is needed. A --contract file that differs is
refused, naming what differs, except with use_current_contract, which
moves a waiting or escalated operation onto that file (approver only;
counters kept, limits lowered where the file's are lower).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, op, contracts, err := env.operationAndContract(cmd.Context(), store, auditKey, contractArg, args[0], args[1] == pollwarden.OptionUseCurrentContract)
			if err != nil {
				return err
			}
			defer st.Close()
			if by == "" {
				by = env.lookup("USER")
			}
			if by == "" {
				return usage(errors.New("--by is required to record who decided"))
			}
			// Whoever can write the store file acts as an approver here.
			caller := operations.Caller{Caller: tokens.Caller{Actor: pollwarden.Actor{Name: by, Role: pollwarden.RoleApprover}}, Local: true, Owner: by}
			ops := operations.New(operations.Options{Controller: env.newController(st), Contracts: contracts, Clock: env.clock()})
			next, err := ops.Decide(cmd.Context(), operations.DecisionParams{Caller: caller, ID: op.ID, Option: args[1], Note: note, Escalation: escalation})
			if err != nil {
				if _, refused := operations.AsProblems(err); refused {
					return usage(err)
				}
				return err
			}
			fmt.Fprintln(env.Stdout, summaryLine(next))
			return nil
		},
	}
	cmd.Flags().StringVar(&store, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else the user's state directory)")
	cmd.Flags().StringVar(&contractArg, "contract", "", "contract file or name: checked against the stored contract, or the one use_current_contract moves the operation onto (default: the stored contract)")
	cmd.Flags().StringVar(&by, "by", "", "who decides (default $USER)")
	cmd.Flags().StringVar(&note, "note", "", "why, recorded with the decision")
	cmd.Flags().StringVar(&escalation, "escalation", "", "the escalation id answered (default: the open question); a stale one is refused")
	cmd.Flags().StringVar(&auditKey, "audit-key", "", auditKeyHelp)
	return cmd
}
