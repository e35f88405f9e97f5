package cli

import (
	"context"

	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/operations"
)

// resumeStored is wait (or submit) --operation-id ID alone: it resumes
// the stored operation under the contract the store keeps for it, with
// its job and variables, so no contract file is needed in any directory.
func (env Env) resumeStored(ctx context.Context, door, id, store, auditKey string, asJSON, quiet bool) error {
	st, _, err := env.openStoreKey(ctx, store, auditKey, true)
	if err != nil {
		return err
	}
	defer st.Close()
	ctl := env.newController(st)
	ops := operations.New(operations.Options{Controller: ctl, Contracts: namedContracts{env}, CredentialAvailable: env.credentialAvailable, Clock: env.clock()})
	p := operations.CreateParams{Caller: env.localCaller(), Names: flagNames, Door: door, CreateRequest: operations.CreateRequest{OperationID: id}}
	op, err := ops.ResumeStored(ctx, p)
	if err != nil {
		return env.createError(ctx, st, err, "", store)
	}
	return env.waitAndReport(ctx, ops, p.Caller, op, resumeCommand(op, op.Contract, store), store, asJSON, quiet)
}

// namedContracts finds a contract by name as --contract NAME does (a
// file in $POLLWARDEN_CONTRACTS, else a built-in): the fallback for an
// operation created before the store kept each operation's contract.
type namedContracts struct{ env Env }

func (n namedContracts) Get(name string) (*contract.Loaded, bool) {
	ex, err := n.env.loadContract(name)
	return ex, err == nil
}

func (n namedContracts) Names() []string { return nil }
