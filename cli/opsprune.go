package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/spf13/cobra"
)

const pruneLong = `prune removes the records of operations that finished (succeeded, failed,
cancelled or expired) longer ago than --older-than, so the store does not
only grow. A waiting, submitting, escalated or cancelling operation is never
pruned, however old.

The audit chain stays verifiable: each event of a pruned operation keeps its
place, kind, time and hashes, and only its payload is dropped, so 'pollwarden
audit verify' still checks the whole chain and still detects an edited,
deleted, inserted or reordered event among those left. 'audit show' of a
pruned operation says how many of its events were pruned. A pruned
operation's id stays taken: creating it again is refused as for an id
someone else holds, and through the API it reads as an id that does not
exist. 'audit verify' reports a payload marked pruned on an operation that
still has its record, keeps an unpruned event, or never finished.
Write down 'pollwarden audit head' (or an anchor) before a prune if you
keep one: a head recorded earlier still verifies afterwards.

--older-than takes a Go duration (720h) or days (30d). --dry-run counts
what would go and changes nothing. 'pollwarden serve --prune-older-than D'
does the same on a schedule.`

func opsPruneCmd(env Env) *cobra.Command {
	var store, olderThan string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "prune --older-than D",
		Short: "Remove the records of operations finished longer ago than D, keeping the audit chain verifiable",
		Long:  pruneLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			age, err := parseAge("--older-than", olderThan)
			if err != nil {
				return usage(err)
			}
			st, err := env.openWith(cmd.Context(), store, nil, false)
			if err != nil {
				return err
			}
			defer st.Close()
			cutoff := env.clock().Now().Add(-age)
			res, err := prune(cmd.Context(), st, cutoff, dryRun)
			if err != nil {
				return err
			}
			verb := "pruned"
			if dryRun {
				verb = "would prune"
			}
			fmt.Fprintf(env.Stdout, "%s %s finished before %s (%s: payloads dropped, hashes kept in the chain)\n",
				verb, plural(int(res.Operations), "operation"), cutoff.UTC().Format(time.RFC3339), plural(int(res.Events), "event"))
			return nil
		},
	}
	cmd.Flags().StringVar(&store, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else the user's state directory)")
	cmd.Flags().StringVar(&olderThan, "older-than", "", "prune operations finished longer ago than this: a Go duration (720h) or days (30d)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count what would be pruned; change nothing")
	return cmd
}

// prune runs the store's prune, for a store that has one.
func prune(ctx context.Context, st pollwarden.Store, before time.Time, dryRun bool) (pollwarden.PruneResult, error) {
	p, ok := st.(pollwarden.Pruner)
	if !ok {
		return pollwarden.PruneResult{}, fmt.Errorf("this store cannot prune")
	}
	return p.OperationPrune(ctx, pollwarden.PruneParams{FinishedBefore: before, DryRun: dryRun})
}

// parseAge reads a retention age: a Go duration or a whole number of
// days ("30d"), which is how retention is usually said.
func parseAge(flag, s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("%s is required: how long after it finished an operation's record is kept (e.g. 30d or 720h)", flag)
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("%s %q: want a number of days such as 30d, or a Go duration such as 720h", flag, s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%s %q: want a number of days such as 30d, or a Go duration such as 720h", flag, s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s %q: must be more than zero", flag, s)
	}
	return d, nil
}

// pruneEvery is how often serve prunes: often enough that records go
// soon after their age, never more than once a minute.
func pruneEvery(age time.Duration) time.Duration {
	return min(max(age/10, time.Minute), time.Hour)
}

// pruneLoop is serve's scheduled prune: once at start, then every
// pruneEvery(age), until ctx ends. A failed prune is logged and tried
// again at the next tick; it never stops the daemon.
func pruneLoop(ctx context.Context, clk pollwarden.Clock, st pollwarden.Store, age time.Duration, log *slog.Logger) {
	t, ticks := clk.NewTicker(pruneEvery(age))
	defer t.Stop()
	for {
		res, err := prune(ctx, st, clk.Now().Add(-age), false)
		switch {
		case errors.Is(err, context.Canceled):
			return
		case err != nil:
			log.Error("prune failed; tried again at the next tick", "error", err.Error())
		case res.Operations > 0:
			log.Info("pruned", "operations", res.Operations, "events", res.Events, "older_than", age.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
	}
}
