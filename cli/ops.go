package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/spf13/cobra"
)

func opsCmd(env Env) *cobra.Command {
	ops := &cobra.Command{Use: "ops", Short: "List, show and prune operation records"}
	var store, phase string
	var asJSON bool
	var limit int
	list := &cobra.Command{
		Use:   "list",
		Short: "List operations, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lp := operations.ListParams{Caller: env.localCaller(), Phase: phase, Names: flagNames}
			if cmd.Flags().Changed("limit") {
				lp.Limit = strconv.Itoa(limit)
			}
			// Judged before the store is opened, which a bad flag must not need.
			if err := operations.CheckList(lp); err != nil {
				return usage(err)
			}
			if path, missing := env.storeMissing(store); missing {
				return env.printNoStore(path, asJSON)
			}
			st, err := env.openStore(cmd.Context(), store)
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := operations.NewReader(st).List(cmd.Context(), lp)
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]pollwarden.Outcome, len(list))
				for i, op := range list {
					out[i] = pollwarden.OutcomeOf(op)
				}
				return writeJSON(env.Stdout, out)
			}
			now := env.clock().Now()
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "OPERATION\tCONTRACT\tJOB\tPHASE\tREASON\tSTATE\tREQUESTS\tDEADLINE")
			for _, op := range list {
				// Escaped, a value can neither add a row nor shift a column.
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", cell(op.ID), cell(op.Contract),
					cell(op.ProviderJobID), phaseCell(op, now), op.Reason, cell(op.LastState),
					op.StatusRequestsUsed, op.MaxStatusRequests, op.DeadlineAt.UTC().Format(time.RFC3339))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			current := env.contractsNow()
			for _, op := range list {
				if hint := orphanHint(op, now, store, current(op.Contract)); hint != nil {
					fmt.Fprintln(env.Stdout)
					for _, l := range hint {
						fmt.Fprintln(env.Stdout, l)
					}
				}
			}
			return nil
		},
	}
	list.Flags().StringVar(&phase, "phase", "", "only operations in this phase")
	list.Flags().IntVar(&limit, "limit", 0, "at most this many (default and 0: all)")
	show := &cobra.Command{
		Use:   "show OPERATION",
		Short: "Show one operation record",
		Long: `Show one operation record: its phase, limits and, when it awaits a decision,
the question with its options. An escalated operation whose contract, as
this process loads it now ($POLLWARDEN_CONTRACTS, or a built-in of that
name), differs from the one it runs under is also offered
use_current_contract, saying what differs.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := env.openStore(cmd.Context(), store)
			if err != nil {
				return err
			}
			defer st.Close()
			op, err := operations.NewReader(st).Get(cmd.Context(), env.localCaller(), args[0])
			if err != nil {
				return usage(err)
			}
			current := env.contractsNow()(op.Contract)
			op = offerCurrentContract(op, current)
			if asJSON {
				return writeJSON(env.Stdout, pollwarden.OutcomeOf(op))
			}
			if err := env.printOutcome(op, false, false, store); err != nil {
				return err
			}
			for _, l := range orphanHint(op, env.clock().Now(), store, current) {
				fmt.Fprintln(env.Stdout, l)
			}
			return nil
		},
	}
	for _, c := range []*cobra.Command{list, show} {
		c.Flags().StringVar(&store, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else the user's state directory)")
		c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	}
	ops.AddCommand(list, show, opsPruneCmd(env))
	return ops
}

// storeMissing tells whether the SQLite store file the command would read
// does not exist yet, as on a machine where nothing has waited: ops list
// answers an empty list then, naming the path. An empty or foreign file,
// and a PostgreSQL URL, are still opened (and refused) as before.
func (env Env) storeMissing(flag string) (string, bool) {
	path, err := env.storePath(flag, true)
	if err != nil || isPostgresURL(path) {
		return "", false
	}
	_, err = os.Stat(path)
	return path, errors.Is(err, fs.ErrNotExist)
}

// printNoStore is ops list's answer before the first wait: nothing is
// created, and the note says where the store will be.
func (env Env) printNoStore(path string, asJSON bool) error {
	note := fmt.Sprintf("no operations: no store at %s yet (wait or submit creates it)", path)
	if asJSON {
		fmt.Fprintln(env.Stderr, "pollwarden:", note)
		return writeJSON(env.Stdout, []pollwarden.Outcome{})
	}
	fmt.Fprintln(env.Stdout, note)
	return nil
}

// cell is a table value: empty stays empty, anything else is escaped.
func cell(s string) string {
	if s == "" {
		return ""
	}
	return display.Value(s)
}
