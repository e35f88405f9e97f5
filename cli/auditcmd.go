package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/spf13/cobra"
)

func auditCmd(env Env) *cobra.Command {
	a := &cobra.Command{Use: "audit", Short: "Read and verify the audit trail"}
	var store, tz string
	var asJSON bool
	show := &cobra.Command{
		Use:   "show OPERATION",
		Short: "Print an operation's story, one line per event",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			loc, err := time.LoadLocation(tz)
			if err != nil {
				return usage(fmt.Errorf("--tz %q: %w", tz, err))
			}
			st, err := env.openStore(cmd.Context(), store)
			if err != nil {
				return err
			}
			defer st.Close()
			if _, err := st.OperationGet(cmd.Context(), args[0]); err != nil {
				return usage(err)
			}
			events, err := st.EventList(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(env.Stdout, events)
			}
			for _, l := range audit.Story(events, loc) {
				fmt.Fprintln(env.Stdout, l)
			}
			if err := audit.VerifyChain(events); err != nil {
				fmt.Fprintf(env.Stdout, "!! the chain is broken: %v\n", err)
			}
			return nil
		},
	}
	show.Flags().StringVar(&tz, "tz", "UTC", "time zone for the story (IANA name, or Local)")
	show.Flags().BoolVar(&asJSON, "json", false, "print the events as JSON")
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Check every operation's hash chain offline",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := env.openStore(cmd.Context(), store)
			if err != nil {
				return err
			}
			defer st.Close()
			ops, err := st.OperationList(cmd.Context(), pollwarden.ListParams{})
			if err != nil {
				return err
			}
			var bad []error
			n := 0
			for _, op := range ops {
				events, err := st.EventList(cmd.Context(), op.ID)
				if err != nil {
					return err
				}
				n += len(events)
				if err := audit.VerifyChain(events); err != nil {
					bad = append(bad, fmt.Errorf("operation %s: %w", op.ID, err))
				}
			}
			if len(bad) > 0 {
				return &exitError{code: ExitInternal, err: errors.Join(bad...)}
			}
			fmt.Fprintf(env.Stdout, "ok: %d operations, %d events, every chain intact\n", len(ops), n)
			return nil
		},
	}
	for _, c := range []*cobra.Command{show, verify} {
		c.Flags().StringVar(&store, "store", "", "store file (default $POLLWARDEN_STORE, else the user's state directory)")
	}
	a.AddCommand(show, verify)
	return a
}
