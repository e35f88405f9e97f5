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
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/spf13/cobra"
)

type waitFlags struct {
	contract, jobID, statusURL, opID, deadline, store string
	auditKey                                          string
	vars                                              []string
	maxRequests, maxFailures                          int
	json, quiet                                       bool
}

func waitCmd(env Env) *cobra.Command {
	var f waitFlags
	cmd := &cobra.Command{
		Use:   "wait --contract FILE|NAME (--job-id ID | --status-url URL)",
		Short: "Wait in the foreground for one job, within a deadline and a request budget",
		Long: `wait creates the operation record (or resumes it, counters intact, when
--operation-id names one that exists) and polls the job's status until an
outcome. Without --operation-id the id is derived from the contract and the
job, so running the same command again resumes instead of starting over.

Exit codes: 0 succeeded · 10 failed · 11 cancelled · 12 expired ·
20 deadline_exceeded · 21 request_budget_exhausted · 22 rate_limited ·
23 unknown_state · 24 authorization_denied · 25 provider_failure ·
26 integration_failure · 2 usage or contract error · 1 internal error ·
130 interrupted (resume with the same command).`,
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
	fl.IntVar(&f.maxFailures, "max-transport-failures", 0, "maximum transport failures; may only lower the contract's")
	fl.StringVar(&f.store, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else pollwarden.db in the user's state directory)")
	fl.StringVar(&f.auditKey, "audit-key", "", auditKeyHelp)
	fl.BoolVar(&f.json, "json", false, "print one JSON object with the outcome on stdout")
	fl.BoolVar(&f.quiet, "quiet", false, "print only the outcome")
	return cmd
}

func (env Env) runWait(ctx context.Context, cmd *cobra.Command, f waitFlags) error {
	now := time.Now()
	p, err := f.params(cmd, now)
	if err != nil {
		return err
	}
	ex, err := env.loadContract(f.contract)
	if err != nil {
		return err
	}
	ct := ex.Contract()
	if p.StatusURL != "" {
		if err := contract.CheckOrigin(ct, p.StatusURL); err != nil {
			return usage(fmt.Errorf("--status-url: %w", err))
		}
	}
	if p.Vars, err = contract.OperationVars(ct, p.Vars, p.StatusURL != ""); err != nil {
		return usage(fmt.Errorf("--var: %w", err))
	}
	if p.ProviderJobID != "" {
		if _, err := contract.StatusURLFor(ct, p.ProviderJobID, p.Vars); err != nil {
			return usage(fmt.Errorf("--job-id: %w", err))
		}
	}
	if err := env.credentialAvailable(ct); err != nil {
		return usage(err)
	}
	if w := prober.ShortSecretWarning(ct, env.Getenv, os.ReadFile); w != "" {
		fmt.Fprintf(env.Stderr, "pollwarden: warning: %s\n", w)
	}
	if p.ID == "" {
		cred := ""
		if ct.Status.Credential != nil {
			cred = ct.Status.Credential.Ref
		}
		p.ID = pollwarden.DerivedOperationID(ct.Name, policy.FingerprintVars(ct, p.ProviderJobID, p.StatusURL, cred, p.Vars), "")
	}
	p.Owner = env.localOwner("cli")
	st, _, err := env.openStoreKey(ctx, f.store, f.auditKey, true)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := checkResume(ctx, st, ex, f.contract, f.store, p, now); err != nil {
		return err
	}
	ctl := env.newController(st)
	op, created, err := ctl.Submit(ctx, ex, p)
	if err != nil {
		if errors.Is(err, pollwarden.ErrInvalid) {
			return usage(err)
		}
		return err
	}
	if !created && op.Phase.Polling() {
		if err := ctl.Resumed(ctx, op.ID, "pollwarden wait ("+p.Owner+")"); err != nil {
			return err
		}
	}
	return env.waitAndReport(ctx, ctl, ex, op.ID, resumeCommand(op, f.contract, f.store), f.json, f.quiet)
}

// waitAndReport waits for operation id until an outcome or an escalation
// and reports it with wait's output and exit codes; submit ends the same
// way.
func (env Env) waitAndReport(ctx context.Context, ctl *controller.Controller, ex *contract.Extractor, id, resume string, asJSON, quiet bool) error {
	var live *liveLine
	if !quiet && isTerminal(env.Stderr) {
		live = &liveLine{w: env.Stderr}
	}
	final, err := ctl.Wait(ctx, ex, id, live.update)
	live.clear()
	if err != nil {
		if ctx.Err() != nil {
			// Recorded after the fact: the wait has already stopped.
			if err := ctl.Interrupted(context.WithoutCancel(ctx), id, "pollwarden wait ("+env.localOwner("cli")+")"); err != nil {
				fmt.Fprintf(env.Stderr, "pollwarden: the interruption could not be recorded: %v\n", err)
			}
			fmt.Fprintf(env.Stderr, "pollwarden: interrupted; nothing polls operation %s now. Resume it, counters intact, with: %s\n",
				display.Value(id), resume)
			return &exitError{code: 130, err: errors.New("")}
		}
		return err
	}
	if err := env.printOutcome(final, asJSON, quiet); err != nil {
		return err
	}
	if code := ExitCode(final); code != ExitOK {
		return &exitError{code: code, err: errors.New("")}
	}
	return nil
}

func (f waitFlags) params(cmd *cobra.Command, now time.Time) (policy.NewParams, error) {
	p := policy.NewParams{ID: f.opID, ProviderJobID: f.jobID, StatusURL: f.statusURL}
	var problems []string
	vars, err := parseVarFlags(f.vars)
	if err != nil {
		problems = append(problems, err.Error())
	}
	p.Vars = vars
	if f.opID != "" {
		if err := pollwarden.CheckOperationID("--operation-id", f.opID); err != nil {
			problems = append(problems, strings.TrimPrefix(err.Error(), pollwarden.ErrInvalid.Error()+": "))
		}
	}
	if (f.jobID == "") == (f.statusURL == "") {
		problems = append(problems, "give exactly one of --job-id and --status-url")
	}
	if cmd.Flags().Changed("max-requests") && f.maxRequests < 1 {
		problems = append(problems, fmt.Sprintf("--max-requests must be at least 1, got %d", f.maxRequests))
	}
	if cmd.Flags().Changed("max-transport-failures") && f.maxFailures < 1 {
		problems = append(problems, fmt.Sprintf("--max-transport-failures must be at least 1, got %d", f.maxFailures))
	}
	p.MaxStatusRequests, p.MaxTransportFailures = f.maxRequests, f.maxFailures
	if f.deadline != "" {
		dl, err := pollwarden.ParseDeadline("--deadline", f.deadline, now)
		if err != nil {
			problems = append(problems, strings.TrimPrefix(err.Error(), pollwarden.ErrInvalid.Error()+": "))
		}
		p.Deadline = dl
	}
	if len(problems) > 0 {
		return p, usage(errors.New(strings.Join(problems, "; ")))
	}
	return p, nil
}

// credentialAvailable refuses to start when the contract's credential
// cannot be found, naming the reference and never a value.
func (env Env) credentialAvailable(c *pollwarden.Contract) error {
	cr := c.Status.Credential
	if cr == nil {
		return nil
	}
	kind, name, _ := strings.Cut(cr.Ref, ":")
	switch kind {
	case "env":
		if env.lookup(name) == "" {
			return fmt.Errorf("credential %s is not set", cr.Ref)
		}
	case "file":
		if _, err := os.Stat(name); err != nil {
			return fmt.Errorf("credential %s cannot be read: %w", cr.Ref, err)
		}
	}
	return nil
}

func (env Env) newController(st pollwarden.Store) *controller.Controller {
	pr := prober.New(prober.Options{Now: time.Now, Getenv: env.Getenv})
	return controller.New(controller.Options{Store: st, Prober: pr, Clock: pollwarden.RealClock{}, Rand: newRand()})
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
			return nil, fmt.Errorf("--var %s: want NAME=VALUE", clipArg(kv))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--var %s is given twice", clipArg(name))
		}
		out[name] = val
	}
	return out, nil
}

// clipArg shortens a command-line value for an error message.
func clipArg(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
