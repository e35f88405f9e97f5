package cli

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/tokens"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"
)

type waitFlags struct {
	contract, jobID, statusURL, opID, deadline, store string
	auditKey, otlpEndpoint                            string
	vars                                              []string
	maxRequests, maxFailures, priority                int
	json, quiet                                       bool
}

func waitCmd(env Env) *cobra.Command {
	var f waitFlags
	cmd := &cobra.Command{
		Use:   "wait (--contract FILE|NAME (--job-id ID | --status-url URL) | --operation-id ID)",
		Short: "Wait in the foreground for one job, within a deadline and a request budget",
		Long: `wait creates the operation record (or resumes it, counters intact, when
--operation-id names one that exists) and polls the job's status until an
outcome. Without --operation-id the id is derived from the contract and the
job, so running the same command again resumes instead of starting over.
An edited contract file never starts a fresh budget: an unfinished operation
on the job takes up an edit that only lowers limits, and any other edit is
refused (exit 2) with what changed and the commands to choose.

The store keeps the contract each operation was created under: --operation-id
ID alone (no --contract, no --job-id) resumes it with its contract, job and
variables, from any directory. With --contract, the file must be that
contract, or the resume is refused (exit 2) saying what differs.

Progress goes to stderr: a live line on a terminal; otherwise (a CI log, a
file, a pipe) a timestamped line for each status request and phase change,
and one at least every 5 minutes while nothing happens. --quiet silences it.

Exit codes: 0 succeeded · 10 failed · 11 cancelled · 12 expired ·
20 deadline_exceeded · 21 request_budget_exhausted · 22 rate_limited ·
23 unknown_state · 24 authorization_denied · 25 provider_failure ·
26 integration_failure · 2 usage or contract error · 1 internal error ·
130 interrupted (resume with the same command).

--otlp-endpoint URL (or the standard OTEL_EXPORTER_OTLP_ENDPOINT) exports
OpenTelemetry traces over OTLP/HTTP, as serve does (docs/tracing.md): a
span for each step and its status request. Off by default; the spans are
sent before wait exits, within a few seconds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return env.runWait(cmd.Context(), cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.contract, "contract", "", "contract file, or a contract name looked up in $POLLWARDEN_CONTRACTS")
	fl.StringVar(&f.jobID, "job-id", "", "the provider's job id, substituted into the contract's status URL")
	fl.StringVar(&f.statusURL, "status-url", "", "the job's status URL as the provider returned it (its scheme, host and port must be one of the contract's origins)")
	fl.StringArrayVar(&f.vars, "var", nil, "NAME=VALUE for a variable the contract declares (repeatable)")
	fl.StringVar(&f.opID, "operation-id", "", "operation id; an existing one is resumed with its counters")
	fl.StringVar(&f.deadline, "deadline", "", "deadline as a duration from now (40m) or an RFC 3339 time; may only lower the contract's")
	fl.IntVar(&f.maxRequests, "max-requests", 0, "maximum status requests; may only lower the contract's")
	fl.IntVar(&f.priority, "priority", 0, "the operation's priority when a shared quota is what limits: 1 (most urgent) to 9, default 5; below 5 only through an approver's door")
	fl.IntVar(&f.maxFailures, "max-transport-failures", 0, "maximum transport failures; may only lower the contract's")
	fl.StringVar(&f.store, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else pollwarden.db in the user's state directory)")
	fl.StringVar(&f.auditKey, "audit-key", "", auditKeyHelp)
	otlpFlag(fl, &f.otlpEndpoint)
	fl.BoolVar(&f.json, "json", false, "print one JSON object with the outcome on stdout")
	fl.BoolVar(&f.quiet, "quiet", false, "print only the outcome")
	return cmd
}

func (env Env) runWait(ctx context.Context, cmd *cobra.Command, f waitFlags) error {
	vars, err := parseVarFlags(f.vars)
	if err != nil {
		return usage(err)
	}
	if f.contract == "" && f.jobID == "" && f.statusURL == "" && f.opID != "" && len(vars) == 0 {
		return env.resumeStored(ctx, "pollwarden wait", f.opID, f.store, f.auditKey, f.json, f.quiet)
	}
	ex, err := env.loadContract(f.contract)
	if err != nil {
		return err
	}
	p := operations.CreateParams{Caller: env.localCaller(), Names: flagNames, Door: "pollwarden wait", CreateRequest: operations.CreateRequest{
		OperationID: f.opID, Contract: ex.Spec().Name, JobID: f.jobID, StatusURL: f.statusURL, Vars: vars, Deadline: f.deadline}}
	if cmd.Flags().Changed("max-requests") {
		p.MaxStatusRequests = &f.maxRequests
	}
	if cmd.Flags().Changed("priority") {
		p.Priority = &f.priority
	}
	if cmd.Flags().Changed("max-transport-failures") {
		p.MaxTransportFailures = &f.maxFailures
	}
	// Judged before the store is opened, so that a bad request creates
	// no store file.
	o := operations.Options{Contracts: operations.Only(ex), CredentialAvailable: env.credentialAvailable, Clock: env.clock()}
	if _, err := operations.Check(o, p); err != nil {
		return usage(err)
	}
	if w := prober.ShortSecretWarning(ex.Spec(), env.Getenv, os.ReadFile); w != "" {
		fmt.Fprintf(env.Stderr, "pollwarden: warning: %s\n", w)
	}
	ops, op, done, err := env.createOnStore(ctx, f.otlpEndpoint, f.store, f.auditKey, f.contract, "", o, p)
	if err != nil {
		return err
	}
	defer done()
	return env.waitAndReport(ctx, ops, p.Caller, op, resumeCommand(op, f.contract, f.store), f.store, f.json, f.quiet)
}

// createOnStore is the shared middle of wait and submit, once the request
// was judged without a store: it starts tracing, opens the store for
// writing and creates (or resumes) the operation p asks for. With
// interruptedID set, an interrupt during the create says how to resume
// (a submission may be on its way). done flushes the traces and closes
// the store.
func (env Env) createOnStore(ctx context.Context, otlp, store, auditKey, contractArg, interruptedID string, o operations.Options, p operations.CreateParams) (ops *operations.Service, op *pollwarden.Operation, done func(), err error) {
	tr, flushTraces, err := env.startTracing(ctx, otlp)
	if err != nil {
		return nil, nil, nil, err
	}
	st, _, err := env.openStoreKey(ctx, store, auditKey, true)
	if err != nil {
		flushTraces()
		return nil, nil, nil, err
	}
	done = func() { st.Close(); flushTraces() }
	o.Controller = env.newTracedController(st, tr.Tracer)
	ops = operations.New(o)
	if op, _, err = ops.Create(ctx, p); err != nil {
		defer done()
		if interruptedID != "" && ctx.Err() != nil {
			fmt.Fprintf(env.Stderr, "pollwarden: interrupted; resume with --operation-id %s\n", interruptedID)
			return nil, nil, nil, &exitError{code: 130, err: errors.New("")}
		}
		return nil, nil, nil, env.createError(ctx, st, err, contractArg, store)
	}
	return ops, op, done, nil
}

// flagNames spells the use cases' fields as the commands' flags.
var flagNames = map[string]string{
	"operation_id": "--operation-id", "contract": "--contract", "job_id": "--job-id", "status_url": "--status-url",
	"vars": "--var", "deadline": "--deadline", "max_status_requests": "--max-requests",
	"max_transport_failures": "--max-transport-failures", "submit.body": "--body", "submit": "--body",
	"phase": "--phase", "limit": "--limit", "priority": "--priority",
}

// localCaller is the CLI as a caller: its authority is the store file,
// so it sees every operation, and it records the user as the owner.
func (env Env) localCaller() operations.Caller {
	return operations.Caller{Caller: tokens.Caller{Actor: pollwarden.Actor{Name: env.localOwner("cli"), Role: pollwarden.RoleAgent}},
		Local: true, Owner: env.localOwner("cli")}
}

// createError is a refused create as a usage error (exit 2); a resume the
// stored record refuses also says the command that resumes it.
func (env Env) createError(ctx context.Context, st pollwarden.Store, err error, contractArg, storeFlag string) error {
	p, ok := operations.AsProblems(err)
	if !ok {
		return err
	}
	if p.ID != "" {
		if stored, gerr := operations.NewReader(st).Get(ctx, env.localCaller(), p.ID); gerr == nil {
			if p.List[0].Field == "contract" {
				contractArg = stored.Contract
			}
			return usage(fmt.Errorf("%s To resume it, run: %s; to wait on this job as a new operation, leave out --operation-id or give a new one",
				p.Error(), resumeCommand(stored, contractArg, storeFlag)))
		}
	}
	return usage(err)
}

// waitAndReport waits for operation op until an outcome or an escalation
// and reports it with wait's output and exit codes; submit ends the same
// way. An interrupt is recorded in the operation's story. Progress goes to
// stderr: a live line on a terminal, else a log line for each request and
// phase change (see progressLog); --quiet silences both.
func (env Env) waitAndReport(ctx context.Context, ops *operations.Service, caller operations.Caller, op *pollwarden.Operation, resume, storeFlag string, asJSON, quiet bool) error {
	id := op.ID
	var live *liveLine
	var plog *progressLog
	switch {
	case quiet:
	case isTerminal(env.Stderr):
		live = &liveLine{w: env.Stderr, now: env.clock().Now}
	default:
		plog = newProgressLog(env.Stderr, env.clock().Now, op)
	}
	final, err := ops.Follow(ctx, caller, id, func(op *pollwarden.Operation, next time.Time) {
		live.update(op, next)
		plog.update(op, next)
	})
	live.clear()
	plog.finish(final)
	if err != nil {
		if ctx.Err() != nil {
			// Recorded after the fact: the wait has already stopped.
			if err := ops.Interrupted(context.WithoutCancel(ctx), caller, id, "pollwarden wait ("+env.localOwner("cli")+")"); err != nil {
				fmt.Fprintf(env.Stderr, "pollwarden: the interruption could not be recorded: %v\n", err)
			}
			fmt.Fprintf(env.Stderr, "pollwarden: interrupted; nothing polls operation %s now. Resume it, counters intact, with: %s\n",
				display.Value(id), resume)
			return &exitError{code: 130, err: errors.New("")}
		}
		return err
	}
	if err := env.printOutcome(final, asJSON, quiet, storeFlag); err != nil {
		return err
	}
	if code := ExitCode(final); code != ExitOK {
		return &exitError{code: code, err: errors.New("")}
	}
	return nil
}

// credentialAvailable refuses to start when the contract's credential
// cannot be used, naming the reference and never a value. It asks the
// prober's own resolver, so what it accepts is what a status request
// will send (an empty file or variable is refused here, not after the
// first step as an integration_failure).
func (env Env) credentialAvailable(c *pollwarden.ContractSpec) error {
	cr := c.Status.Credential
	if cr == nil {
		return nil
	}
	for _, ref := range []string{cr.Ref, cr.ClientID} {
		if ref == "" {
			continue
		}
		if _, err := prober.ResolveSecret(ref, env.Getenv, os.ReadFile); err != nil {
			return err
		}
	}
	return nil
}

func (env Env) newController(st pollwarden.Store) *controller.Controller {
	return env.newTracedController(st, nil)
}

// newTracedController is newController with a span for each step and
// action when tr is set (wait and submit with --otlp-endpoint).
func (env Env) newTracedController(st pollwarden.Store, tr trace.Tracer) *controller.Controller {
	pr := prober.New(prober.Options{Now: env.clock().Now, Getenv: env.Getenv})
	return controller.New(controller.Options{Store: st, Prober: pr, Clock: env.clock(), Rand: newRand(), LeaseSlack: env.slack(), Tracer: tr})
}

// newRand seeds jitter from the system's entropy so that processes started
// together do not draw the same delays.
func newRand() *rand.Rand {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])))
}

// parseVarFlags reads repeated --var NAME=VALUE flags; a name given twice
// is refused rather than one value silently winning.
func parseVarFlags(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(flags))
	for _, kv := range flags {
		name, val, ok := strings.Cut(kv, "=")
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("--var %s: want NAME=VALUE", display.Clip(kv))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--var %s is given twice", display.Clip(name))
		}
		out[name] = val
	}
	return out, nil
}
