package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/spf13/cobra"
)

// verifyPage is how many events a walk reads per query.
const verifyPage = 2000

func auditCmd(env Env) *cobra.Command {
	a := &cobra.Command{
		Use:   "audit",
		Short: "Read, export, verify and anchor the audit trail",
		Long: `The store keeps every event of every operation in ONE hash chain: each event
has a position (pos 1, 2, 3…) and carries the hash of the event before it, so
an edited, deleted, inserted or reordered event breaks the chain. Event
payloads may be sealed (encrypted) with --audit-key; the chain covers the
sealed bytes, so verify, head and anchor never need the key. See docs/audit.md.`,
	}
	storeFlag := func(c *cobra.Command, p *string) {
		c.Flags().StringVar(p, "store", "", "store file or postgres:// URL (default $POLLWARDEN_STORE, else the user's state directory)")
	}
	a.AddCommand(auditShowCmd(env, storeFlag), auditExportCmd(env, storeFlag), auditVerifyCmd(env, storeFlag),
		auditHeadCmd(env, storeFlag), auditAnchorCmd(env, storeFlag), auditKeygenCmd(env))
	return a
}

func auditShowCmd(env Env, storeFlag func(*cobra.Command, *string)) *cobra.Command {
	var store, tz, key string
	var asJSON bool
	show := &cobra.Command{
		Use:   "show OPERATION",
		Short: "Print an operation's story, one line per event, and check its part of the chain",
		Long: `show prints an operation's story, one line per event, in --tz (default UTC).
It also checks the operation's events against the chain: each event's hash,
its link to the event just before it in the store, and its seq. At the first
break it prints "!! chain broken at event N: why" after that event's line,
prints the rest, and exits 1. A sealed store needs its --audit-key.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			loc, err := time.LoadLocation(tz)
			if err != nil {
				return usage(fmt.Errorf("--tz %q: %w", tz, err))
			}
			ctx := cmd.Context()
			st, sealer, err := env.openStoreKey(ctx, store, key, false)
			if err != nil {
				return err
			}
			defer st.Close()
			// A pruned operation has no record but keeps its trail.
			_, getErr := operations.NewReader(st).Get(ctx, env.localCaller(), args[0])
			if getErr != nil && operations.KindOf(getErr) != operations.NotFound {
				return usage(getErr)
			}
			var events []pollwarden.Event
			for after := int64(0); ; {
				page, err := st.EventScan(ctx, pollwarden.EventScanParams{OperationID: args[0], AfterPos: after})
				if err != nil {
					return err
				}
				if len(page) == 0 {
					break
				}
				events = append(events, page...)
				after = page[len(page)-1].Pos
			}
			if getErr != nil && len(events) == 0 {
				// No record and no trail; a pruned operation has its trail.
				return usage(getErr)
			}
			unreadable := map[int]error{}
			for i := range events {
				d, err := audit.OpenPayload(sealer, events[i])
				switch {
				case errors.Is(err, audit.ErrNoKey), errors.Is(err, audit.ErrWrongKey):
					return usage(err)
				case err != nil:
					unreadable[i] = err
				}
				events[i].Data = d
			}
			broken, err := audit.VerifyOperation(events, func(pos int64) (string, bool, error) {
				page, err := st.EventScan(ctx, pollwarden.EventScanParams{AfterPos: pos - 1, Limit: 1})
				if err != nil || len(page) == 0 || page[0].Pos != pos {
					return "", false, err
				}
				return page[0].Hash, true, nil
			})
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(env.Stdout, events); err != nil {
					return err
				}
			} else {
				env.printStory(events, unreadable, broken, audit.NewTeller(loc))
			}
			if broken != nil {
				return &exitError{code: ExitInternal, err: broken}
			}
			for i := range events {
				if err, bad := unreadable[i]; bad {
					return &exitError{code: ExitInternal, err: err}
				}
			}
			return nil
		},
	}
	storeFlag(show, &store)
	show.Flags().StringVar(&tz, "tz", "UTC", "time zone for the story (IANA name, or Local)")
	show.Flags().BoolVar(&asJSON, "json", false, "print the events as one JSON array")
	show.Flags().StringVar(&key, "audit-key", "", "the store's sealing key file, needed when payloads are sealed (default $POLLWARDEN_AUDIT_KEY_FILE)")
	return show
}

// exportLine is one line of `audit export`: every field always present.
type exportLine struct {
	OperationID string               `json:"operation_id"`
	Seq         int64                `json:"seq"`
	Pos         int64                `json:"pos"`
	At          time.Time            `json:"at"`
	Kind        pollwarden.EventKind `json:"kind"`
	Data        pollwarden.EventData `json:"data"`
	PrevHash    string               `json:"prev_hash"`
	Hash        string               `json:"hash"`
}

func auditExportCmd(env Env, storeFlag func(*cobra.Command, *string)) *cobra.Command {
	var store, key, out, op string
	var after int64
	cmd := &cobra.Command{
		Use:   "export [--out FILE]",
		Short: "Write the events as JSON Lines for a SIEM, in chain order",
		Long: `export writes one JSON object per line and event, in chain order:
operation_id, seq, pos, at (UTC), kind, data, prev_hash, hash. Each line's
prev_hash is the previous line's hash, so a receiver can check continuity;
--after POS resumes after the last position already shipped. A sealed store
needs its --audit-key (the data is written decrypted). export does not
verify the chain; run 'pollwarden audit verify' for that.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if after < 0 {
				return usage(fmt.Errorf("--after %d: want a position >= 0", after))
			}
			ctx := cmd.Context()
			st, sealer, err := env.openStoreKey(ctx, store, key, false)
			if err != nil {
				return err
			}
			defer st.Close()
			w := env.Stdout
			var f *os.File
			if out != "" {
				// Audit data: readable by the owner only, like the store.
				if f, err = os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
					return usage(fmt.Errorf("--out: %w", err))
				}
				defer f.Close()
				w = f
			}
			n, err := exportEvents(ctx, st, sealer, w, pollwarden.EventScanParams{AfterPos: after, OperationID: op})
			if err != nil {
				return keyError(err)
			}
			if f != nil {
				if err := f.Close(); err != nil {
					return err
				}
				fmt.Fprintf(env.Stderr, "pollwarden: exported %d events to %s\n", n, out)
			}
			return nil
		},
	}
	storeFlag(cmd, &store)
	cmd.Flags().StringVar(&out, "out", "", "write to this file (created 0600) instead of stdout")
	cmd.Flags().Int64Var(&after, "after", 0, "only events after this position")
	cmd.Flags().StringVar(&op, "operation", "", "only this operation's events")
	cmd.Flags().StringVar(&key, "audit-key", "", "the store's sealing key file, needed when payloads are sealed (default $POLLWARDEN_AUDIT_KEY_FILE)")
	return cmd
}

func exportEvents(ctx context.Context, st pollwarden.Store, sealer audit.Sealer, w io.Writer, p pollwarden.EventScanParams) (int, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n := 0
	p.Limit = verifyPage
	for {
		page, err := st.EventScan(ctx, p)
		if err != nil {
			return n, err
		}
		if len(page) == 0 {
			return n, bw.Flush()
		}
		for _, e := range page {
			d, err := audit.OpenPayload(sealer, e)
			if err != nil {
				return n, err
			}
			line := exportLine{OperationID: e.OperationID, Seq: e.Seq, Pos: e.Pos, At: e.At.UTC(), Kind: e.Kind,
				Data: d, PrevHash: e.PrevHash, Hash: e.Hash}
			if err := enc.Encode(line); err != nil {
				return n, err
			}
			n++
		}
		p.AfterPos = page[len(page)-1].Pos
	}
}

// printStory prints the story of events, told a run of readable events at
// a time; an event whose payload cannot be read gets a line of its own,
// and the event where the chain breaks is followed by a line saying so.
func (env Env) printStory(events []pollwarden.Event, unreadable map[int]error, broken *audit.ChainError, teller *audit.Teller) {
	mark := func(e pollwarden.Event) {
		if broken != nil && broken.Pos == e.Pos {
			fmt.Fprintf(env.Stdout, "!! chain broken at event %d (pos %d): %s: %s\n", e.Seq, e.Pos, broken.Problem, broken.Detail)
		}
	}
	for i := 0; i < len(events); {
		if err, bad := unreadable[i]; bad {
			fmt.Fprintf(env.Stdout, "%s ?? %s event, payload unreadable: %v\n", teller.Stamp(events[i].At), events[i].Kind, err)
			mark(events[i])
			i++
			continue
		}
		j := i
		for j < len(events) {
			if _, bad := unreadable[j]; bad {
				break
			}
			j++
		}
		for _, told := range teller.Tell(events[i:j]) {
			fmt.Fprintln(env.Stdout, told.Text)
			for _, e := range events[i+told.First : i+told.Last+1] {
				mark(e)
			}
		}
		i = j
	}
}
