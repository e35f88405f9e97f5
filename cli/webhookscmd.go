package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
)

// webhooksCmd lets an operator see the outbox and send a message again
// after a receiver was fixed; the daemon's dispatcher does the sending.
func webhooksCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "webhooks", Short: "Inspect the webhook outbox and send dead messages again"}
	var store, status string
	var asJSON bool
	var limit int
	list := &cobra.Command{
		Use:   "list [--status pending|delivered|dead]",
		Short: "List webhook messages in the order they were queued",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := pollwarden.OutboxStatus(status)
			switch s {
			case "", pollwarden.OutboxPending, pollwarden.OutboxDelivered, pollwarden.OutboxDead:
			default:
				return usage(fmt.Errorf("--status %q: want pending, delivered or dead", status))
			}
			ob, closeStore, err := env.openOutbox(cmd, store, true)
			if err != nil {
				return err
			}
			defer closeStore()
			msgs, err := ob.OutboxList(cmd.Context(), pollwarden.OutboxListParams{Status: s, Limit: limit})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(env.Stdout, outboxViews(msgs))
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SEQ\tWEBHOOK-ID\tENDPOINT\tTYPE\tOPERATION\tSTATUS\tATTEMPTS\tLAST\tNEXT ATTEMPT")
			for _, m := range msgs {
				next := "-"
				if m.Status == pollwarden.OutboxPending {
					next = m.NextAttemptAt.UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", m.Seq, m.ID, cell(m.Endpoint), m.Type, cell(m.OperationID),
					m.Status, m.Attempts, display.Text(lastAttempt(m)), next)
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&status, "status", "", "only messages in this status")
	list.Flags().IntVar(&limit, "limit", 0, "at most this many (0: all)")
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	redeliver := &cobra.Command{
		Use:   "redeliver SEQ...",
		Short: "Queue dead or delivered messages again (same webhook-id, same body)",
		Long: `redeliver makes each message pending again, due now, with its attempts
counted from zero; a running serve with --webhooks sends it within about a
second. Receivers deduplicate on webhook-id, so sending a delivered message
again is safe. A pending message is refused: it is going to be sent anyway.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seqs := make([]int64, len(args))
			for i, a := range args {
				n, err := strconv.ParseInt(a, 10, 64)
				if err != nil || n < 1 {
					return usage(fmt.Errorf("%q is not a message number (the SEQ column of webhooks list)", a))
				}
				seqs[i] = n
			}
			ob, closeStore, err := env.openOutbox(cmd, store, false)
			if err != nil {
				return err
			}
			defer closeStore()
			var failed error
			for _, n := range seqs {
				err := ob.OutboxRequeue(cmd.Context(), n, env.clock().Now())
				switch {
				case err == nil:
					fmt.Fprintf(env.Stdout, "message %d queued again\n", n)
				case errors.Is(err, pollwarden.ErrNotFound), errors.Is(err, pollwarden.ErrConflict):
					fmt.Fprintf(env.Stderr, "pollwarden: %v\n", err)
					failed = usage(errors.New("some messages were not queued again"))
				default:
					return err
				}
			}
			return failed
		},
	}
	for _, c := range []*cobra.Command{list, redeliver} {
		c.Flags().StringVar(&store, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else the user's state directory)")
	}
	cmd.AddCommand(list, redeliver)
	return cmd
}

// openOutbox opens the store and its webhook outbox; readOnly for a
// command that only lists (see openStore).
func (env Env) openOutbox(cmd *cobra.Command, store string, readOnly bool) (pollwarden.Outbox, func(), error) {
	st, err := env.openWith(cmd.Context(), store, nil, readOnly)
	if err != nil {
		return nil, nil, err
	}
	ob, ok := st.(pollwarden.Outbox)
	if !ok {
		st.Close()
		return nil, nil, usage(fmt.Errorf("this store (%T) keeps no webhook outbox", st))
	}
	return ob, func() { st.Close() }, nil
}

func lastAttempt(m pollwarden.OutboxMessage) string {
	switch {
	case m.Attempts == 0:
		return "-"
	case m.LastError != "":
		return m.LastError
	case m.LastStatus != 0 && !json.Valid(m.Body):
		return "SMTP " + strconv.Itoa(m.LastStatus) // an e-mail's body is the message itself
	case m.LastStatus != 0:
		return "HTTP " + strconv.Itoa(m.LastStatus)
	}
	return "-"
}

// outboxView is a message as `webhooks list --json` prints it: the body as
// JSON, not bytes, and no claim details.
type outboxView struct {
	Seq           int64           `json:"seq"`
	WebhookID     string          `json:"webhook_id"`
	Endpoint      string          `json:"endpoint"`
	Type          string          `json:"type"`
	OperationID   string          `json:"operation_id"`
	Status        string          `json:"status"`
	Attempts      int             `json:"attempts"`
	LastStatus    int             `json:"last_status,omitempty"`
	LastError     string          `json:"last_error,omitempty"`
	NextAttemptAt *time.Time      `json:"next_attempt_at,omitempty"`
	SettledAt     *time.Time      `json:"settled_at,omitempty"`
	Body          json.RawMessage `json:"body"`
}

func outboxViews(msgs []pollwarden.OutboxMessage) []outboxView {
	out := make([]outboxView, len(msgs))
	for i, m := range msgs {
		out[i] = outboxView{Seq: m.Seq, WebhookID: m.ID, Endpoint: m.Endpoint, Type: m.Type, OperationID: m.OperationID,
			Status: string(m.Status), Attempts: m.Attempts, LastStatus: m.LastStatus, LastError: m.LastError,
			SettledAt: m.SettledAt, Body: m.Body}
		if !json.Valid(m.Body) {
			// An e-mail is kept as the message itself: shown as a string.
			out[i].Body, _ = json.Marshal(string(m.Body))
		}
		if m.Status == pollwarden.OutboxPending {
			next := m.NextAttemptAt.UTC()
			out[i].NextAttemptAt = &next
		}
	}
	return out
}
