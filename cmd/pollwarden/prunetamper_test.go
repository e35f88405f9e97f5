package main

import (
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestAuditVerifyCatchesPrunedMarkerOutOfPlace: a real serve records an
// approver's decision on an operation that is escalated again, another
// operation escalates, and a finished one is pruned (real ops prune). In
// copies of the SQLite file, with the append-only triggers dropped: the
// decision is blanked to the pruned marker, alone and with every event of
// its operation; the other escalated operation is blanked whole and its
// record deleted; a pruned operation's finishing event has its kind and
// time rewritten. `pollwarden audit verify` (real process) reports
// each copy broken, naming the operation; the untouched store verifies.
func TestAuditVerifyCatchesPrunedMarkerOutOfPlace(t *testing.T) {
	t.Parallel()
	srv, base, p := tenantServe(t)
	store := p.cmd.Args[slices.Index(p.cmd.Args, "--store")+1]
	srv.Script("job-done", fp.State("succeeded", map[string]any{"result": map[string]any{"url": "https://files.example.com/r.csv"}}))
	call(t, base, tokA, "POST", "/v1/operations", `{"operation_id":"done","contract":"proc-test","job_id":"job-done"}`, 201)
	call(t, base, tokA, "POST", "/v1/operations", `{"operation_id":"esc","contract":"proc-test","job_id":"`+jobA+`","max_status_requests":1}`, 201)
	phaseIs := func(id, phase string) func() bool {
		return func() bool {
			return call(t, base, tokA, "GET", "/v1/operations/"+id+"?wait=5s", "", 200)["phase"] == phase
		}
	}
	call(t, base, tokA, "POST", "/v1/operations", `{"operation_id":"esc2","contract":"proc-test","job_id":"`+jobA+`","max_status_requests":1}`, 201)
	waitFor(t, "done to succeed", phaseIs("done", "succeeded"))
	waitFor(t, "esc2 to escalate", phaseIs("esc2", "escalated"))
	waitFor(t, "esc to escalate", phaseIs("esc", "escalated"))
	call(t, base, tokApp, "POST", "/v1/operations/esc/decisions", `{"option":"extend","note":"one more look"}`, 200)
	waitFor(t, "esc to escalate again", phaseIs("esc", "escalated"))
	waitFor(t, "ops prune to remove done", func() bool {
		pr := start(t, "ops", "prune", "--older-than", "1ms", "--store", store)
		if code := pr.exitCode(t); code != 0 {
			t.Fatalf("ops prune exited %d: %s", code, pr.stderr.String())
		}
		return strings.HasPrefix(pr.stdout.String(), "pruned 1 operation ")
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, p.stderr.String())
	}

	verify := func(db string) (int, string) {
		v := start(t, "audit", "verify", "--store", db)
		code := v.exitCode(t)
		return code, v.stdout.String() + v.stderr.String()
	}
	if code, out := verify(store); code != 0 || !strings.Contains(out, "pruned") {
		t.Fatalf("the untouched store: exit %d: %s", code, out)
	}
	for _, tc := range []struct {
		name, op string
		stmts    []string
	}{
		{"an approver's decision blanked", "esc", []string{
			"UPDATE events SET payload = CAST('pruned' AS BLOB) WHERE operation_id = 'esc' AND kind = 'decision'"}},
		{"the decision blanked with every event of its operation", "esc", []string{
			"UPDATE events SET payload = CAST('pruned' AS BLOB) WHERE operation_id = 'esc'"}},
		{"an escalated operation blanked and its record deleted", "esc2", []string{
			"UPDATE events SET payload = CAST('pruned' AS BLOB) WHERE operation_id = 'esc2'",
			"DELETE FROM operations WHERE id = 'esc2'"}},
		{"a pruned operation's finishing event rewritten", "done", []string{
			"UPDATE events SET kind = 'state_changed', at = '2001-01-01T00:00:00Z' WHERE operation_id = 'done' AND kind IN ('succeeded', 'finished')"}},
		// The pruned event keeps its place and its finishing event: only
		// its hash, which binds what the prune kept, can tell.
		{"a pruned event's kind rewritten", "done", []string{
			"UPDATE events SET kind = 'decision' WHERE operation_id = 'done' AND seq = 1"}},
		{"a pruned event's time rewritten", "done", []string{
			"UPDATE events SET at = '2001-01-01T00:00:00Z' WHERE operation_id = 'done' AND seq = 1"}},
		{"a pruned event's payload digest replaced", "done", []string{
			"UPDATE events SET payload_digest = (SELECT payload_digest FROM events WHERE operation_id = 'esc' AND seq = 1) WHERE operation_id = 'done' AND seq = 1"}},
		{"a pruned event's payload digest removed", "done", []string{
			"UPDATE events SET payload_digest = '' WHERE operation_id = 'done' AND seq = (SELECT max(seq) FROM events WHERE operation_id = 'done')"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := tamperedCopy(t, store, tc.stmts)
			code, out := verify(db)
			if code != 1 || !strings.Contains(out, "BROKEN") || !strings.Contains(out, "operation "+tc.op) {
				t.Fatalf("audit verify of the tampered copy: exit %d, want 1 naming operation %s:\n%s", code, tc.op, out)
			}
		})
	}
}

// tamperedCopy copies the SQLite store at src, drops its append-only
// triggers in the copy and runs stmts there, as someone holding the file
// could.
func tamperedCopy(t *testing.T, src string, stmts []string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy.db")
	for _, suffix := range []string{"", "-wal"} {
		in, err := os.Open(src + suffix)
		if os.IsNotExist(err) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(dst + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", dst)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	drop := []string{"DROP TRIGGER events_no_update", "DROP TRIGGER operations_keep_trail_delete"}
	for _, q := range append(drop, stmts...) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return dst
}
