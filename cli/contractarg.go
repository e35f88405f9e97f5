package cli

import (
	"context"

	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/policy"
)

// loadContract reads --contract: a file path, or a contract name looked up
// as NAME.yaml (or .yml, .json) in $POLLWARDEN_CONTRACTS.
func (env Env) loadContract(arg string) (*contract.Loaded, error) {
	if arg == "" {
		return nil, usage(fmt.Errorf("--contract is required"))
	}
	path := arg
	if _, err := os.Stat(arg); err != nil && !strings.ContainsAny(arg, `/\`) && !strings.Contains(arg, ".") {
		path = ""
		if dir := env.lookup("POLLWARDEN_CONTRACTS"); dir != "" {
			for _, ext := range []string{".yaml", ".yml", ".json"} {
				p := filepath.Join(dir, arg+ext)
				if _, err := os.Stat(p); err == nil {
					path = p
					break
				}
			}
		}
		if path == "" {
			// No loaded file of that name: a built-in, if there is one.
			ex, err := contract.Builtin(arg)
			if err != nil {
				where := "POLLWARDEN_CONTRACTS is not set"
				if dir := env.lookup("POLLWARDEN_CONTRACTS"); dir != "" {
					where = "not found in " + dir
				}
				return nil, usage(fmt.Errorf("contract %q: no such file (%s), and %v", arg, where, err))
			}
			return ex, nil
		}
	}
	c, err := contract.Load(path)
	if err != nil {
		return nil, usage(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		return nil, usage(err)
	}
	return ex, nil
}

// contractOf is a short accessor used by several commands.
func contractOf(ex *contract.Loaded) *pollwarden.ContractSpec { return ex.Spec() }

// operationAndContract opens the store for writing, reads operation id as
// the local caller and, when contractArg is given, loads it: what every
// command acting on one stored operation needs first. Without
// contractArg, contracts finds nothing but the fallback for an operation
// created before the store kept its contract (its name in
// $POLLWARDEN_CONTRACTS, or a built-in); the operation's own stored
// contract needs no file. A contractArg that differs from the stored one
// is refused naming what differs, unless mayDiffer (the decision that
// moves the operation onto it). The caller closes st.
func (env Env) operationAndContract(ctx context.Context, store, auditKey, contractArg, id string, mayDiffer bool) (st pollwarden.Store, op *pollwarden.Operation, contracts operations.Contracts, err error) {
	st, _, err = env.openStoreKey(ctx, store, auditKey, true)
	if err != nil {
		return nil, nil, nil, err
	}
	op, err = operations.NewReader(st).Get(ctx, env.localCaller(), id)
	if err != nil {
		st.Close()
		return nil, nil, nil, usage(err)
	}
	if contractArg == "" {
		return st, op, namedContracts{env}, nil
	}
	ex, err := env.loadContract(contractArg)
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	if op.ContractFingerprint != "" && !mayDiffer {
		if err := differsFromStored(op, ex.Spec()); err != nil {
			st.Close()
			return nil, nil, nil, usage(err)
		}
	}
	return st, op, operations.Only(ex), nil
}

// differsFromStored refuses c for op when it is not the contract op runs
// under, naming what differs.
func differsFromStored(op *pollwarden.Operation, c *pollwarden.ContractSpec) error {
	if c.Name != op.Contract {
		return fmt.Errorf("operation %s runs under contract %s, not %s; leave out --contract: the store keeps the operation's contract", op.ID, op.Contract, c.Name)
	}
	if ch := policy.CompareContract(op, c); ch.Changed() {
		return fmt.Errorf("--contract %s differs from the contract operation %s runs under (%s); leave out --contract to use the one the store keeps, or move the operation onto this one with: pollwarden decide %s %s --contract FILE",
			c.Name, op.ID, strings.Join(ch.Changes, ", "), shellWord(op.ID), pollwarden.OptionUseCurrentContract)
	}
	return nil
}
