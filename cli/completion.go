package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/spf13/cobra"
)

func completionCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `completion prints a script that makes the shell complete pollwarden's
commands and flags, contract names (the files in $POLLWARDEN_CONTRACTS, or
in --contracts where a command takes it) and operation ids from the store.

  bash:  source <(pollwarden completion bash)
  zsh:   pollwarden completion zsh > "${fpath[1]}/_pollwarden"
  fish:  pollwarden completion fish > ~/.config/fish/completions/pollwarden.fish

Completing an operation id opens the store read-only: it never creates,
migrates or writes one.`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args:      cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(env.Stdout, true)
			case "zsh":
				return root.GenZshCompletion(env.Stdout)
			default:
				return root.GenFishCompletion(env.Stdout, true)
			}
		},
	}
}

// completeArgs wires the completions that need pollwarden's own
// knowledge: contract names for --contract, operation ids for the
// commands and flags that take one, and an escalation's options for
// decide. Cobra's own completion command is replaced by completionCmd.
func (env Env) completeArgs(root *cobra.Command) {
	root.CompletionOptions.DisableDefaultCmd = true
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("contract") != nil {
			_ = c.RegisterFlagCompletionFunc("contract", env.completeContract)
		}
		if c.Flags().Lookup("operation-id") != nil {
			_ = c.RegisterFlagCompletionFunc("operation-id", env.completeOperation)
		}
		switch c.CommandPath() {
		case "pollwarden ops show", "pollwarden audit show":
			c.ValidArgsFunction = func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return env.completeOperation(c, args, prefix)
			}
		case "pollwarden decide":
			c.ValidArgsFunction = env.completeDecide
		case "pollwarden contract show":
			c.ValidArgsFunction = func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return env.completeContract(c, args, prefix)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeContract offers the contract names in the contracts directory
// (--contracts when the command has it, else $POLLWARDEN_CONTRACTS);
// when none matches, the shell completes file names instead.
func (env Env) completeContract(c *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	dir := env.lookup("POLLWARDEN_CONTRACTS")
	if f := c.Flags().Lookup("contracts"); f != nil && f.Value.String() != "" {
		dir = f.Value.String()
	}
	if dir == "" {
		return nil, cobra.ShellCompDirectiveDefault
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, cobra.ShellCompDirectiveDefault
	}
	var names []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ext)
		if strings.HasPrefix(name, prefix) && !slices.Contains(names, name) {
			names = append(names, name+"\tcontract in "+dir)
		}
	}
	return names, cobra.ShellCompDirectiveDefault
}

// completeOperation offers the operation ids in the store named by
// --store (or the default), opened read-only, with each one's phase,
// contract and job as the description.
func (env Env) completeOperation(c *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	ops := env.storedOperations(c)
	var out []string
	for _, op := range ops {
		// An id the shell could not take back as typed (a control
		// character) is not offered; the description is escaped.
		if strings.HasPrefix(op.ID, prefix) && display.Value(op.ID) == op.ID {
			out = append(out, fmt.Sprintf("%s\t%s %s job %s", op.ID, op.Phase, display.Value(op.Contract), display.Value(op.ProviderJobID)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeDecide completes decide's operation, then the options its
// escalation offers (cancel_at_provider for one still waiting).
func (env Env) completeDecide(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return env.completeOperation(c, args, prefix)
	case 1:
		var out []string
		for _, op := range env.storedOperations(c) {
			if op.ID != args[0] {
				continue
			}
			if op.Escalation != nil {
				for _, o := range op.Escalation.Options {
					out = append(out, o.ID+"\t"+display.Text(o.Label))
				}
			}
			if op.Phase.Polling() {
				out = append(out, pollwarden.OptionCancel+"\task the provider to cancel the job")
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// storedOperations lists the store's operations for a completion; a
// store that is missing or unreadable completes nothing.
func (env Env) storedOperations(c *cobra.Command) []*pollwarden.Operation {
	flag := ""
	if f := c.Flags().Lookup("store"); f != nil {
		flag = f.Value.String()
	}
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	st, err := env.openStore(ctx, flag)
	if err != nil {
		return nil
	}
	defer st.Close()
	ops, err := operations.NewReader(st).List(ctx, operations.ListParams{Caller: env.localCaller(), Limit: "500"})
	if err != nil {
		return nil
	}
	return ops
}
