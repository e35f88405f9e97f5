package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/spf13/cobra"
)

// maxSubmitBody bounds the body a submission carries: it is kept on the
// record so that a resume sends the same request.
const maxSubmitBody = 1 << 20

type submitFlags struct {
	contract, body, opID, deadline, store, auditKey string
	otlpEndpoint                                    string
	vars                                            []string
	maxRequests, priority                           int
	noWait, json, quiet                             bool
}

func submitCmd(env Env) *cobra.Command {
	var f submitFlags
	cmd := &cobra.Command{
		Use:   "submit (--contract FILE|NAME --body FILE|- | --operation-id ID)",
		Short: "Submit a job under the contract's submit block, then wait for it like wait",
		Long: `submit records the operation (limits, the body's digest and, where the
contract declares one, an idempotency key) before sending the submission,
records the job id and status location the provider answers, then waits
exactly like wait. Running the same command again resumes it and never
submits twice: without a declared idempotency key an interrupted submission
is never re-sent, and the operation escalates for a person to look the job
up or resubmit. Without --operation-id the id is derived from the contract,
the body, the variables and the credential name. --operation-id ID alone
(no --contract, no --body) resumes it under the contract, body and
variables the store keeps.

Exit codes are wait's; with --no-wait, 0 once the job id is recorded.

--otlp-endpoint URL (or the standard OTEL_EXPORTER_OTLP_ENDPOINT) exports
OpenTelemetry traces over OTLP/HTTP, as serve does (docs/tracing.md): the
submission (record, send, answer) and each step. Off by default; the spans
are sent before submit exits, within a few seconds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return env.runSubmit(cmd.Context(), cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.contract, "contract", "", "contract file, or a contract name looked up in $POLLWARDEN_CONTRACTS")
	fl.StringVar(&f.body, "body", "", "the JSON body of the submission: a file, or - for stdin")
	fl.StringArrayVar(&f.vars, "var", nil, "NAME=VALUE for a variable the contract declares (repeatable)")
	fl.StringVar(&f.opID, "operation-id", "", "operation id; an existing one is resumed, never submitted again")
	fl.StringVar(&f.deadline, "deadline", "", "deadline as a duration from now (40m) or an RFC 3339 time; may only lower the contract's")
	fl.IntVar(&f.maxRequests, "max-requests", 0, "maximum status requests; may only lower the contract's")
	fl.IntVar(&f.priority, "priority", 0, "the operation's priority when a shared quota is what limits: 1 (most urgent) to 9, default 5; below 5 only through an approver's door")
	fl.BoolVar(&f.noWait, "no-wait", false, "exit once the job id is recorded, printing the record")
	fl.StringVar(&f.store, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else pollwarden.db in the user's state directory)")
	fl.StringVar(&f.auditKey, "audit-key", "", auditKeyHelp)
	otlpFlag(fl, &f.otlpEndpoint)
	fl.BoolVar(&f.json, "json", false, "print one JSON object on stdout")
	fl.BoolVar(&f.quiet, "quiet", false, "print only the outcome")
	return cmd
}

func (env Env) runSubmit(ctx context.Context, cmd *cobra.Command, f submitFlags) error {
	vars, err := parseVarFlags(f.vars)
	if err != nil {
		return usage(err)
	}
	if f.contract == "" && f.body == "" && f.opID != "" && len(vars) == 0 {
		return env.resumeStored(ctx, "pollwarden submit", f.opID, f.store, f.auditKey, f.json, f.quiet)
	}
	body, err := readBody(f.body, env.Stdin)
	if err != nil {
		return usage(err)
	}
	ex, err := env.loadContract(f.contract)
	if err != nil {
		return err
	}
	p := operations.CreateParams{Caller: env.localCaller(), Names: flagNames, Door: "pollwarden submit", CreateRequest: operations.CreateRequest{
		OperationID: f.opID, Contract: ex.Spec().Name, Vars: vars, Deadline: f.deadline, Submit: &operations.SubmitParams{Body: body}}}
	if cmd.Flags().Changed("max-requests") {
		p.MaxStatusRequests = &f.maxRequests
	}
	if cmd.Flags().Changed("priority") {
		p.Priority = &f.priority
	}
	// Judged before the store is opened, so that a bad request creates
	// no store file.
	o := operations.Options{Contracts: operations.Only(ex), CredentialAvailable: env.credentialAvailable, Clock: env.clock()}
	id, err := operations.Check(o, p)
	if err != nil {
		return usage(err)
	}
	ops, op, done, err := env.createOnStore(ctx, f.otlpEndpoint, f.store, f.auditKey, f.contract, id, o, p)
	if err != nil {
		return err
	}
	defer done()
	if f.noWait && op.Phase == pollwarden.PhaseWaiting {
		if f.json {
			return writeJSON(env.Stdout, op)
		}
		fmt.Fprintf(env.Stdout, "%s: submitted, job %s recorded\n", op.ID, op.ProviderJobID)
		return nil
	}
	// Re-running submit with the operation id resumes it without a
	// second submission; once the job id is known, wait does as well.
	return env.waitAndReport(ctx, ops, p.Caller, op, resumeCommand(op, f.contract, f.store), f.store, f.json, f.quiet)
}

// readBody reads the submission body from a file or stdin, bounded, and
// refuses what is not JSON.
func readBody(name string, stdin io.Reader) ([]byte, error) {
	var r io.Reader
	switch name {
	case "":
		return nil, errors.New("--body is required (a JSON file, or - for stdin)")
	case "-":
		if stdin == nil {
			return nil, errors.New("--body -: no stdin")
		}
		r = stdin
	default:
		fh, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("--body: %w", err)
		}
		defer fh.Close()
		r = fh
	}
	b, err := io.ReadAll(io.LimitReader(r, maxSubmitBody+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("--body: %w", err)
	case len(b) > maxSubmitBody:
		return nil, fmt.Errorf("--body is larger than %d bytes", maxSubmitBody)
	case !json.Valid(b):
		return nil, errors.New("--body is not valid JSON")
	}
	return b, nil
}
