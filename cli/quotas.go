package cli

import (
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pollwarden/pollwarden/operations"
)

// quotasCmd shows the shared quotas of a store, as GET /v1/quotas does:
// the store file's holder sees every key and who waits on it.
func quotasCmd(env Env) *cobra.Command {
	var store string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "quotas",
		Short: "Show the shared quota of each key: limit, requests used, the provider's count, who waits",
		Long: `quotas lists every quota key the store holds a row for (a credential's
secret reference such as env:GITHUB_TOKEN, never the secret, or a contract's
name): the declared limit and window, the requests granted in the current
window by every process and replica on the store, the provider's last
remaining count and reset, a hold learned from a rate limit, and how many
operations wait on the key. --json prints what GET /v1/quotas answers,
with the waiting operations (the first 50 per key, most urgent first).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path, missing := env.storeMissing(store); missing {
				if asJSON {
					return writeJSON(env.Stdout, map[string]any{"quotas": []operations.QuotaView{}})
				}
				fmt.Fprintf(env.Stdout, "no store at %s yet: no quota was used\n", path)
				return nil
			}
			st, err := env.openStore(cmd.Context(), store)
			if err != nil {
				return err
			}
			defer st.Close()
			views, err := operations.NewReader(st).Quotas(cmd.Context(), env.localCaller(), env.clock().Now())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(env.Stdout, map[string]any{"quotas": views})
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tLIMIT\tUSED\tPROVIDER REMAINING\tRESET\tHELD UNTIL\tWAITING")
			for _, v := range views {
				limit := "none"
				if v.Limit > 0 {
					limit = strconv.Itoa(v.Limit) + "/" + v.Per
				}
				remaining := "—"
				if v.Remaining != nil {
					remaining = strconv.Itoa(*v.Remaining)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\n", cell(v.Key), limit, v.Used, remaining, when(v.ResetAt), when(v.HeldUntil), v.Waiting)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&store, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else the user's state directory)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// when is t for a table cell: RFC 3339 in UTC, or a dash.
func when(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return t.UTC().Format(time.RFC3339)
}
