package cli

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/sqlite"
)

// oldDemoStore runs the demo two days in the past, so that its finished
// operations are old enough to prune, and returns the store's path.
func oldDemoStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	env := Env{Stdout: io.Discard, Stderr: io.Discard}
	start := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	if _, err := env.demo(t.Context(), demoOptions{dir: dir, clock: pollwarden.NewJumpClock(start),
		rand: rand.New(rand.NewPCG(1, 2)), loc: time.UTC}); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "demo.db")
}

// TestPruneKeepsChainVerifiable: after a prune of the demo's finished
// operations (the escalated ones stay), verify passes, a head written
// down before the prune still verifies, and tampering with what is left,
// kept or pruned, is still detected.
func TestPruneKeepsChainVerifiable(t *testing.T) {
	db := oldDemoStore(t)
	head, _ := mustRun(t, 0, nil, "audit", "head", "--store", db)
	out, _ := mustRun(t, 0, nil, "ops", "prune", "--older-than", "24h", "--store", db)
	if !strings.HasPrefix(out, "pruned 7 operations finished before ") {
		t.Fatalf("prune: %s", out)
	}
	list, _ := mustRun(t, 0, nil, "ops", "list", "--store", db)
	if strings.Count(list, " escalated ") != 6 || strings.Contains(list, "demo-1-") || strings.Contains(list, "demo-submit") {
		t.Fatalf("after the prune, ops list:\n%s", list)
	}
	out, _ = mustRun(t, 0, nil, "audit", "verify", "--store", db, "--head", strings.TrimSpace(head))
	if !strings.Contains(out, "116 events (") || !strings.Contains(out, "pruned: payload dropped, hash kept), the chain is intact") {
		t.Fatalf("verify after the prune: %s", out)
	}

	for name, tc := range map[string]struct {
		stmt, want string
	}{
		"a kept event edited": {"UPDATE events SET kind = 'decision' WHERE operation_id = 'demo-9-exp_paused' AND seq = 2", "hash mismatch"},
		"a pruned event's hash replaced": {"UPDATE events SET hash = '" + strings.Repeat("0", 64) + "' " +
			"WHERE operation_id = 'demo-1-exp_success' AND seq = 3", "hash mismatch"},
		"a pruned event's kind rewritten": {"UPDATE events SET kind = 'decision' WHERE operation_id = 'demo-1-exp_success' AND seq = 2", "hash mismatch"},
		"a pruned event deleted":          {"DELETE FROM events WHERE operation_id = 'demo-3-exp_failed' AND seq = 2", "pos gap"},
	} {
		t.Run(name, func(t *testing.T) {
			copyDB := filepath.Join(t.TempDir(), "copy.db")
			copyStore(t, db, copyDB)
			tamper(t, copyDB, tc.stmt)
			_, errs := mustRun(t, 1, nil, "audit", "verify", "--store", copyDB)
			if !strings.Contains(errs, tc.want) {
				t.Fatalf("verify of a store with %s: %s", name, errs)
			}
		})
	}
}

// TestPruneRefusedOutsideFinished: the store itself refuses to drop the
// payload of an operation that is not finished, or to delete a record
// whose events are not pruned, whoever asks.
func TestPruneRefusedOutsideFinished(t *testing.T) {
	db := oldDemoStore(t)
	raw := func(q string) error {
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(db)}
		d, err := sql.Open("sqlite", u.String()+"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)")
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		_, err = d.ExecContext(t.Context(), q)
		return err
	}
	for _, q := range []string{
		"UPDATE events SET payload = CAST('pruned' AS BLOB) WHERE operation_id = 'demo-9-exp_paused'",
		"DELETE FROM operations WHERE id = 'demo-1-exp_success'",
		"UPDATE events SET payload = CAST('{}' AS BLOB) WHERE operation_id = 'demo-1-exp_success'",
	} {
		if err := raw(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want it refused", q, err)
		}
	}
}

// TestServePrunesOnSchedule: serve --prune-older-than prunes at start;
// a waiting or escalated operation stays.
func TestServePrunesOnSchedule(t *testing.T) {
	db := oldDemoStore(t)
	dir := filepath.Dir(db) // holds demo-export.yaml
	tpath := filepath.Join(t.TempDir(), "tokens.yaml")
	writeFile(t, tpath, tokensFile(tokenEntry("alice", "approver", "tok-alice")))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	var errb strings.Builder
	go func() {
		env := Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb,
			Getenv: func(string) (string, bool) { return "", false }}
		done <- Main(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--store", db, "--contracts", dir,
			"--tokens", tpath, "--prune-older-than", "1d"}, env)
	}()
	stopped := false
	defer func() {
		if cancel(); !stopped {
			<-done
		}
	}()
	st, err := sqlite.Open(t.Context(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	giveUp := time.After(30 * time.Second) // a bound on a hung test, not a measure of speed
	for {
		_, err := st.OperationGet(t.Context(), "demo-1-exp_success")
		if err != nil {
			if !errors.Is(err, pollwarden.ErrNotFound) {
				t.Fatal(err)
			}
			break
		}
		select {
		case code := <-done:
			stopped = true
			t.Fatalf("serve exited with %d before pruning: %s", code, errb.String())
		case <-giveUp:
			t.Fatalf("serve --prune-older-than 1d never pruned the finished operation")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if _, err := st.OperationGet(t.Context(), "demo-9-exp_paused"); err != nil {
		t.Fatalf("the escalated operation was pruned: %v", err)
	}
}
