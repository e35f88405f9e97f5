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
)

// loadContract reads --contract: a file path, or a contract name looked up
// as NAME.yaml (or .yml, .json) in $POLLWARDEN_CONTRACTS.
func (env Env) loadContract(arg string) (*contract.Extractor, error) {
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
func contractOf(ex *contract.Extractor) *pollwarden.Contract { return ex.Contract() }

// operationAndContract opens the store for writing, reads operation id as
// the local caller and loads contractArg, defaulting to the operation's own
// contract name: what every command acting on one stored operation needs
// first. The caller closes st.
func (env Env) operationAndContract(ctx context.Context, store, auditKey, contractArg, id string) (st pollwarden.Store, op *pollwarden.Operation, ex *contract.Extractor, err error) {
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
		contractArg = op.Contract
	}
	if ex, err = env.loadContract(contractArg); err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	return st, op, ex, nil
}
