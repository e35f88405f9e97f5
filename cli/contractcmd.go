package cli

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/contract/builtin"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/spf13/cobra"
)

func contractCmd(env Env) *cobra.Command {
	c := &cobra.Command{Use: "contract", Short: "Work with contract files"}
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "Check a contract file: every problem with its line (exit 2), or a summary of its state table",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ct, err := contract.Load(args[0])
			if err != nil {
				return usage(err)
			}
			if _, err := contract.Compile(ct); err != nil {
				return usage(err)
			}
			fmt.Fprint(env.Stdout, contract.Summary(ct))
			for _, w := range policy.LimitWarnings(ct) {
				fmt.Fprintf(env.Stderr, "pollwarden: warning: %s\n", w)
			}
			if w := prober.ShortSecretWarning(ct, env.Getenv, os.ReadFile); w != "" {
				fmt.Fprintf(env.Stderr, "pollwarden: warning: %s\n", w)
			}
			return nil
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the built-in contracts, each with what it waits for",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			for _, in := range builtin.List() {
				fmt.Fprintf(tw, "%s\t%s\n", in.Name, in.Description)
			}
			return tw.Flush()
		},
	}
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in contract as YAML (a starting point, or a base for extends:)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, ok := builtin.Source(args[0])
			if !ok {
				return usage(fmt.Errorf("no built-in contract %q (built-ins: %s)", args[0], strings.Join(builtin.Names(), ", ")))
			}
			_, err := env.Stdout.Write(data)
			return err
		},
	}
	c.AddCommand(check, list, show, contractTestCmd(env))
	return c
}
