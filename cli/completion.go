package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract/builtin"
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
in --contracts where a command takes it, and the built-in contracts) and
operation ids from the store.

  bash:  source <(pollwarden completion bash)
         (needs the bash-completion package: apt-get install bash-completion,
         brew install bash-completion@2; without it bash reports
         "_get_comp_words_by_ref: command not found")
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
			// contract show prints built-ins only.
			c.ValidArgsFunction = func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return builtinNames(prefix, nil), cobra.ShellCompDirectiveNoFileComp
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeContract offers the contract names in the contracts directory
// (--contracts when the command has it, else $POLLWARDEN_CONTRACTS), then
// the built-in names that --contract NAME also resolves (a file of the
// same name shadows its built-in, as in the lookup); file names complete
// too, for a contract given by its path.
func (env Env) completeContract(c *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	dir := env.lookup("POLLWARDEN_CONTRACTS")
	if f := c.Flags().Lookup("contracts"); f != nil && f.Value.String() != "" {
		dir = f.Value.String()
	}
	names := dirContractNames(dir, prefix)
	if c.Flags().Lookup("contract") != nil {
		names = append(names, builtinNames(prefix, names)...)
	}
	return names, cobra.ShellCompDirectiveDefault
}

// builtinNames is the built-in contracts whose name starts with prefix,
// each described, leaving out those already offered (taken).
func builtinNames(prefix string, taken []string) []string {
	var out []string
	for _, in := range builtin.List() {
		shadowed := slices.ContainsFunc(taken, func(t string) bool { return strings.HasPrefix(t, in.Name+"\t") })
		if strings.HasPrefix(in.Name, prefix) && !shadowed {
			out = append(out, in.Name+"\tbuilt-in: "+in.Description)
		}
	}
	return out
}

// dirContractNames is the names of the contract files in dir that start
// with prefix, each described by where it is.
func dirContractNames(dir, prefix string) []string {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
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
	return names
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
