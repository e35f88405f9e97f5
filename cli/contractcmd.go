package cli

import (
	"fmt"
	"os"

	"github.com/pollwarden/pollwarden/contract"
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
			if w := prober.ShortSecretWarning(ct, env.Getenv, os.ReadFile); w != "" {
				fmt.Fprintf(env.Stderr, "pollwarden: warning: %s\n", w)
			}
			return nil
		},
	}
	c.AddCommand(check)
	return c
}
