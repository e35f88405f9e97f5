package cli

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/tokens"
)

// incidentsCmd shows the provider incidents and answers one, through the
// same use cases as the API and the console.
func incidentsCmd(env Env) *cobra.Command {
	var store string
	var asJSON, openOnly bool
	var limit int
	cmd := &cobra.Command{
		Use:   "incidents",
		Short: "List provider incidents (open ones first), or decide one with 'incidents decide'",
		Long: `incidents lists the provider incidents of the store, the open ones first
and then the newest: an outage (at least 5 operations under one credential
failing within 60 s) or a refused credential (a 401 or 403). Each open one
shows how many operations it holds now.

'pollwarden incidents decide ID --option abandon|retry_credential' answers an
open incident for every operation it holds, as an approver (whoever can write
the store file acts as one here).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return usage(fmt.Errorf("--limit %d: want a whole number of at least 1", limit))
			}
			st, err := env.openStore(cmd.Context(), store)
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := operations.NewReader(st).Incidents(cmd.Context(), env.localCaller(), openOnly, strconv.Itoa(limit))
			if err != nil {
				if _, refused := operations.AsProblems(err); refused {
					return usage(err)
				}
				return err
			}
			if asJSON {
				if list == nil {
					list = []*pollwarden.Incident{}
				}
				return writeJSON(env.Stdout, list)
			}
			if len(list) == 0 {
				fmt.Fprintln(env.Stdout, "no provider incidents")
				return nil
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKEY\tKIND\tSTATUS\tWHAT\tSINCE\tHELD\tPROBES")
			for _, inc := range list {
				status, held := "closed", "-"
				if inc.Open() {
					status, held = "open", strconv.Itoa(inc.Held)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", display.Value(inc.ID), display.Value(inc.Key), inc.Kind, status,
					display.Text(inc.What), inc.Since.UTC().Format(time.RFC3339), held, inc.Probes)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&store, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else the user's state directory)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the incidents as a JSON array")
	cmd.Flags().BoolVar(&openOnly, "open", false, "only the open incidents")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many incidents (1 to 1000)")
	cmd.AddCommand(incidentDecideCmd(env))
	return cmd
}

// incidentDecideCmd answers an open incident for every operation it holds.
func incidentDecideCmd(env Env) *cobra.Command {
	var store, option, by, note, auditKey string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "decide INCIDENT --option retry_credential|abandon",
		Short: "Answer an open provider incident for every operation it holds, as an approver",
		Long: `decide answers an open provider incident, and closes it:

  abandon           abandons every operation the incident holds (and those
                    its refused credential escalated) before it closes, so
                    none sends on the way out.
  retry_credential  only for a refused credential that reads differently
                    now, in this process's environment: closes the incident,
                    so the held operations resume spread over their backoff,
                    and gives each escalated operation one request with the
                    new credential. The same credential is refused (exit 2).

The decision is recorded with --by (default $USER) and --note. An unknown
option, a closed incident or an unknown id is refused with exit 2.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if option == "" {
				return usage(errors.New("--option is required: retry_credential or abandon"))
			}
			if by == "" {
				by = env.lookup("USER")
			}
			if by == "" {
				return usage(errors.New("--by is required to record who decided"))
			}
			st, _, err := env.openStoreKey(cmd.Context(), store, auditKey, true)
			if err != nil {
				return err
			}
			defer st.Close()
			// Whoever can write the store file acts as an approver here.
			caller := operations.Caller{Caller: tokens.Caller{Actor: pollwarden.Actor{Name: by, Role: pollwarden.RoleApprover}}, Local: true, Owner: by}
			ops := operations.New(operations.Options{Controller: env.newController(st), Contracts: namedContracts{env},
				Clock: env.clock(), Getenv: env.Getenv, ReadFile: os.ReadFile})
			d, err := ops.DecideIncident(cmd.Context(), operations.IncidentDecisionParams{Caller: caller, ID: args[0], Option: option, Note: note})
			if err != nil {
				if _, refused := operations.AsProblems(err); refused {
					return usage(err)
				}
				return err
			}
			if asJSON {
				return writeJSON(env.Stdout, d)
			}
			fmt.Fprintf(env.Stdout, "incident %s closed: %s; applied to %d operation(s)\n",
				display.Value(d.Incident.ID), display.Text(d.Incident.ClosedBy), len(d.Applied))
			for id, why := range d.Refused {
				fmt.Fprintf(env.Stdout, "not applied to %s: %s\n", display.Value(id), display.Text(why))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&store, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else the user's state directory)")
	cmd.Flags().StringVar(&option, "option", "", "the answer: retry_credential or abandon")
	cmd.Flags().StringVar(&by, "by", "", "who decides (default $USER)")
	cmd.Flags().StringVar(&note, "note", "", "why, recorded with the decision")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what the decision did as JSON")
	cmd.Flags().StringVar(&auditKey, "audit-key", "", auditKeyHelp)
	return cmd
}
