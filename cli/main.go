// Package cli is pollwarden's composition root: it reads flags and the
// environment, opens the store, builds the controller and maps outcomes to
// exit codes. Every command drives the same core in-process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Env is what a command may read from its surroundings; tests pass their
// own so that nothing is read from process globals.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv looks up an environment variable (os.LookupEnv in main).
	Getenv func(string) (string, bool)
	// Version is the version stamped into the binary at link time; empty
	// when none was, and then the build information tells it.
	Version string
	// Clock is where every command reads the time; nil is the wall clock.
	// Tests pass a fake one to pin relative deadlines and ages.
	Clock pollwarden.Clock

	// leaseSlack is the hidden --lease-slack, shared by every command
	// built from this Env; zero is the controller's default.
	leaseSlack *time.Duration
	// progressEvery is the hidden --progress-every of the MCP door
	// (serve's /mcp and mcp); zero is the MCP server's default of 5 s.
	progressEvery *time.Duration
}

// clock is env.Clock, or the wall clock when none was given.
func (env Env) clock() pollwarden.Clock {
	if env.Clock == nil {
		return pollwarden.RealClock{}
	}
	return env.Clock
}

// Exit codes of the specification.
const (
	ExitOK              = 0
	ExitInternal        = 1
	ExitUsage           = 2
	ExitFailed          = 10
	ExitCancelled       = 11
	ExitExpired         = 12
	exitDeadline        = 20
	exitBudget          = 21
	exitRateLimited     = 22
	exitUnknownState    = 23
	exitAuthorization   = 24
	exitProviderFailure = 25
	exitIntegration     = 26
)

// ExitCode maps a final record to the specification's exit code.
func ExitCode(op *pollwarden.Operation) int {
	switch op.Phase {
	case pollwarden.PhaseSucceeded:
		return ExitOK
	case pollwarden.PhaseFailed:
		return ExitFailed
	case pollwarden.PhaseCancelled:
		return ExitCancelled
	case pollwarden.PhaseExpired:
		return ExitExpired
	case pollwarden.PhaseEscalated:
		switch op.Reason {
		case pollwarden.ReasonDeadlineExceeded:
			return exitDeadline
		case pollwarden.ReasonRequestBudgetExhausted:
			return exitBudget
		case pollwarden.ReasonRateLimited:
			return exitRateLimited
		case pollwarden.ReasonUnknownState:
			return exitUnknownState
		case pollwarden.ReasonAuthorizationDenied:
			return exitAuthorization
		case pollwarden.ReasonProviderFailure:
			return exitProviderFailure
		case pollwarden.ReasonIntegrationFailure:
			return exitIntegration
		}
	}
	return ExitInternal
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usage marks err as bad input: exit 2.
func usage(err error) error { return &exitError{code: ExitUsage, err: err} }

// Main runs one pollwarden command and returns its exit code.
func Main(ctx context.Context, args []string, env Env) int {
	root := newRoot(ctx, env)
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintln(env.Stderr, "pollwarden:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(env.Stderr, "pollwarden:", err)
	var ps *contract.Problems
	if errors.Is(err, pollwarden.ErrInvalid) || errors.As(err, &ps) || isFlagError(err) {
		return ExitUsage
	}
	return ExitInternal
}

func newRoot(ctx context.Context, env Env) *cobra.Command {
	env.leaseSlack = new(time.Duration)
	env.progressEvery = new(time.Duration)
	root := &cobra.Command{
		Use:   "pollwarden",
		Short: "Wait on external asynchronous jobs under a bounded, audited contract",
		Long: `pollwarden polls an external job's status endpoint for you under an explicit
contract: what counts as progress, when the next request may go out, when
waiting ends, and who decides what happens next. Every decision is recorded.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       env.versionLine(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &flagError{err} })
	root.PersistentFlags().Var(slackFlag{env.leaseSlack}, "lease-slack", "how much longer than two status timeouts a lease lasts")
	_ = root.PersistentFlags().MarkHidden("lease-slack")
	root.PersistentFlags().Var(slackFlag{env.progressEvery}, "progress-every", "how often wait_job sends a progress notification")
	_ = root.PersistentFlags().MarkHidden("progress-every")
	root.AddCommand(waitCmd(env), submitCmd(env), opsCmd(env), contractCmd(env), auditCmd(env), decideCmd(env), demoCmd(env))
	root.AddCommand(simCmd(env))
	root.AddCommand(serveCmd(env), webhooksCmd(env), incidentsCmd(env))
	root.AddCommand(mcpCmd(env))
	root.AddCommand(versionCmd(env), completionCmd(env))
	env.completeArgs(root)
	root.AddCommand(resultCmd(env))
	root.AddCommand(quotasCmd(env))
	_ = ctx
	argsAreUsage(root)
	return root
}

// argsAreUsage makes every wrong argument count or unknown subcommand a
// usage error (exit 2), as cobra reports them as plain errors, and so is
// any flag or argument that is not UTF-8 (see textOnly). A command that
// only groups others shows its help when called alone.
func argsAreUsage(cmd *cobra.Command) {
	if cmd.HasSubCommands() && cmd.Args == nil && cmd.RunE == nil && cmd.Run == nil {
		cmd.Args = cobra.NoArgs
		cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
	check := cmd.Args
	if check == nil && cmd.Runnable() {
		check = cobra.ArbitraryArgs
	}
	if check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := textOnly(c, args); err != nil {
				return usage(errors.New(pollwarden.RefusalText(err)))
			}
			if err := check(c, args); err != nil {
				return usage(argsError(c, args, err))
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		argsAreUsage(sub)
	}
}

// argsError names the command an argument error is about without the
// program's name, which Main already puts in front of every message, and
// for an unknown subcommand suggests the nearest ones and where to look.
func argsError(c *cobra.Command, args []string, err error) error {
	if c.HasSubCommands() && len(args) > 0 {
		msg := fmt.Sprintf("unknown command %q", args[0])
		if path := subPath(c); path != "" {
			msg += " for " + path
		}
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2
		}
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return fmt.Errorf("%s (see %s --help)", msg, c.CommandPath())
	}
	if path := subPath(c); path != "" {
		return fmt.Errorf("%s: %w", path, err)
	}
	return err
}

// subPath is the command's path below the program, "ops list" for
// `pollwarden ops list`; empty for the program itself.
func subPath(c *cobra.Command) string {
	_, rest, _ := strings.Cut(c.CommandPath(), " ")
	return rest
}

// textOnly refuses a flag value or an argument that is not valid UTF-8,
// naming it: an id, a job id or a name given so would be stored with its
// bad bytes replaced by U+FFFD, not as typed. The command line is text
// throughout, file paths included.
func textOnly(c *cobra.Command, args []string) error {
	var err error
	c.Flags().Visit(func(f *pflag.Flag) {
		if err == nil {
			err = pollwarden.CheckText("--"+f.Name, f.Value.String())
		}
	})
	for i, a := range args {
		if err == nil {
			err = pollwarden.CheckText(fmt.Sprintf("argument %d (%s)", i+1, c.CommandPath()), a)
		}
	}
	return err
}

type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }

func isFlagError(err error) bool {
	var fe *flagError
	return errors.As(err, &fe) || errors.Is(err, errUsage)
}

var errUsage = errors.New("usage")

// lookup reads an environment variable through env.
// localOwner is the owner recorded for operations a local process
// (wait, the stdio MCP server) creates: the door and the user, such as
// cli:alice (cli:local without $USER). Token names may not contain ':',
// so no token owns these. Local processes see every operation: their
// authority is the store file.
func (env Env) localOwner(door string) string {
	u := env.lookup("USER")
	if u == "" {
		u = "local"
	}
	return door + ":" + u
}

func (env Env) lookup(name string) string {
	if env.Getenv == nil {
		return ""
	}
	v, _ := env.Getenv(name)
	return v
}

// OSEnv is the process's real surroundings, for main.
func OSEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.LookupEnv}
}

// slackFlag is --lease-slack, hidden because only tests that kill a
// process need it: they free its leases in moments instead of waiting out
// the default slack. A lease shorter than its write refuses the write, so
// a small value costs retries, never a double request. --progress-every
// is one too, for tests that wait for wait_job's first progress note.
type slackFlag struct{ d *time.Duration }

func (f slackFlag) String() string {
	if f.d == nil || *f.d == 0 {
		return ""
	}
	return f.d.String()
}

func (f slackFlag) Type() string { return "duration" }

func (f slackFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 200ms, got %q", s)
	}
	if d < time.Millisecond {
		return fmt.Errorf("want at least 1ms, got %s", s)
	}
	*f.d = d
	return nil
}

// slack is the --lease-slack value, zero (the controller's default) when
// none was given.
func (env Env) slack() time.Duration {
	if env.leaseSlack == nil {
		return 0
	}
	return *env.leaseSlack
}

// progress is the --progress-every value, zero (the MCP server's default)
// when none was given.
func (env Env) progress() time.Duration {
	if env.progressEvery == nil {
		return 0
	}
	return *env.progressEvery
}
