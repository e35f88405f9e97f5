package controller

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/sqlite"
)

// noEvents drops every event before it reaches the store: the baseline
// that shows what appending the audit trail costs a step.
type noEvents struct{ pollwarden.Store }

func (s noEvents) OperationCreate(ctx context.Context, op *pollwarden.Operation, _ []pollwarden.Event) error {
	return s.Store.OperationCreate(ctx, op, nil)
}

func (s noEvents) OperationCreateUnder(ctx context.Context, op *pollwarden.Operation, _ []pollwarden.Event, c *pollwarden.StoredContract) error {
	return s.Store.OperationCreateUnder(ctx, op, nil, c)
}

func (s noEvents) OperationSave(ctx context.Context, p pollwarden.SaveParams) error {
	p.Events = nil
	return s.Store.OperationSave(ctx, p)
}

// BenchmarkStepAudit is BenchmarkStepSQLite with the audit trail switched
// off (events=none, a baseline no real store allows), kept plain, or
// sealed with XChaCha20-Poly1305. The cost of the audit trail is the drop
// in steps/s from none to plain or sealed (docs/BENCHMARKS.md).
func BenchmarkStepAudit(b *testing.B) {
	key, err := audit.NewSealKey(bytes.Repeat([]byte{1}, audit.SealKeySize))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"FULL", "NORMAL"} {
		for _, events := range []string{"none", "plain", "sealed"} {
			b.Run(fmt.Sprintf("synchronous=%s/events=%s", mode, events), func(b *testing.B) {
				opts := sqlite.Options{Synchronous: mode}
				if events == "sealed" {
					opts.Sealer = key
				}
				raw, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "pw.db"), opts)
				if err != nil {
					b.Fatal(err)
				}
				defer raw.Close()
				var st pollwarden.Store = raw
				if events == "none" {
					st = noEvents{raw}
				}
				benchSteps(b, st)
			})
		}
	}
}
