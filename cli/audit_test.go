package cli

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
)

// run runs one pollwarden command in-process and returns its exit code,
// stdout and stderr.
func run(t *testing.T, getenv map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) (string, bool) { v, ok := getenv[k]; return v, ok }}
	code := Main(t.Context(), args, env)
	return code, out.String(), errb.String()
}

func mustRun(t *testing.T, want int, getenv map[string]string, args ...string) (string, string) {
	t.Helper()
	code, out, errs := run(t, getenv, args...)
	if code != want {
		t.Fatalf("pollwarden %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errs)
	}
	return out, errs
}

// demoStore runs the fixed demo into a new directory and returns it; the
// store is dir/demo.db (116 events of 13 operations), the contract
// dir/demo-export.yaml.
func demoStore(t *testing.T, sealer audit.Sealer) string {
	t.Helper()
	dir := t.TempDir()
	env := Env{Stdout: io.Discard, Stderr: io.Discard}
	_, err := env.demo(t.Context(), demoOptions{dir: dir, clock: pollwarden.NewJumpClock(demoStart),
		rand: rand.New(rand.NewPCG(1, 2)), loc: time.UTC, sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// tamper opens the store file with the bare driver, drops the append-only
// triggers and runs the statements, as an attacker with file access would.
func tamper(t *testing.T, path string, stmts ...string) {
	t.Helper()
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	db, err := sql.Open("sqlite", u.String()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range append([]string{"DROP TRIGGER events_no_update", "DROP TRIGGER events_no_delete"}, stmts...) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestAuditVerifyHeadShow(t *testing.T) {
	dir := demoStore(t, nil)
	db := filepath.Join(dir, "demo.db")
	out, _ := mustRun(t, 0, nil, "audit", "verify", "--store", db)
	if !strings.HasPrefix(out, "ok: 13 operations, 116 events, the chain is intact; head ") {
		t.Fatalf("verify: %s", out)
	}
	head, _ := mustRun(t, 0, nil, "audit", "head", "--store", db)
	head = strings.TrimSpace(head)
	if len(head) != 64 || !strings.Contains(out, head+" at pos 116") {
		t.Fatalf("head %q, verify said %s", head, out)
	}
	js, _ := mustRun(t, 0, nil, "audit", "head", "--store", db, "--json")
	if js != `{"pos":116,"hash":"`+head+`"}`+"\n" {
		t.Fatalf("head --json: %s", js)
	}
	mustRun(t, 0, nil, "audit", "verify", "--store", db, "--head", head)

	// demo-1-exp_success holds pos 1..13; edit the payload of its seq 5.
	tamper(t, db, "UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT), 'running', 'runnin9') AS BLOB) WHERE pos = 6")
	code, out, errs := run(t, nil, "audit", "verify", "--store", db)
	if code != 1 || !strings.Contains(errs, "event pos 6 (operation demo-1-exp_success seq 6): hash mismatch") || !strings.Contains(out, "BROKEN: 5 events verified") {
		t.Fatalf("verify of an edited store: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = run(t, nil, "audit", "show", "demo-1-exp_success", "--store", db)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// The edited answer's line is followed at once by the mark; the state
	// change it no longer agrees with is told on a line of its own.
	if code != 1 || len(lines) != 8 || !strings.HasPrefix(lines[3], "!! chain broken at event 6 (pos 6): hash mismatch") ||
		!strings.Contains(lines[2], "runnin9") || !strings.Contains(lines[4], "state changed queued → running") ||
		!strings.Contains(lines[7], "succeeded after 4 of 8") {
		t.Fatalf("show of an edited operation: exit %d\n%s", code, out)
	}
	// Another operation's own events are intact and it still reads clean.
	if out, _ := mustRun(t, 0, nil, "audit", "show", "demo-2-exp_retry_after", "--store", db); strings.Contains(out, "!!") {
		t.Fatalf("show of an intact operation: %s", out)
	}
}

func TestAuditVerifyDetectsCLI(t *testing.T) {
	for name, tc := range map[string]struct {
		stmts []string
		want  string
	}{
		"delete": {[]string{"DELETE FROM events WHERE pos = 20"}, "event pos 21 (operation demo-2-exp_retry_after seq 8): pos gap"},
		"insert": {[]string{
			"UPDATE events SET pos = pos + 1000 WHERE pos >= 20",
			"UPDATE events SET pos = pos - 1000 + 1 WHERE pos >= 1000",
			"INSERT INTO events SELECT 20, operation_id, 99, at, kind, payload, prev_hash, hash, payload_digest FROM events WHERE pos = 21",
		}, "event pos 20 (operation demo-2-exp_retry_after seq 99): hash mismatch"},
		"swap": {[]string{
			"UPDATE events SET pos = 1000 WHERE pos = 20",
			"UPDATE events SET pos = 20 WHERE pos = 21",
			"UPDATE events SET pos = 21 WHERE pos = 1000",
		}, "event pos 20 (operation demo-2-exp_retry_after seq 8): prev_hash mismatch"},
	} {
		t.Run(name, func(t *testing.T) {
			db := filepath.Join(demoStore(t, nil), "demo.db")
			tamper(t, db, tc.stmts...)
			code, out, errs := run(t, nil, "audit", "verify", "--store", db)
			if code != 1 || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, want 1 with %q\n%s%s", code, tc.want, out, errs)
			}
		})
	}
}

func TestAuditTruncateAndRollback(t *testing.T) {
	dir := demoStore(t, nil)
	db := filepath.Join(dir, "demo.db")
	key := filepath.Join(dir, "anchor.pem")
	out, _ := mustRun(t, 0, nil, "audit", "keygen", "--kind", "anchor", "--out", key)
	if !strings.Contains(out, "fingerprint ") {
		t.Fatalf("keygen: %s", out)
	}
	if st, err := os.Stat(key); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", st.Mode(), err)
	}
	mustRun(t, 2, nil, "audit", "keygen", "--kind", "anchor", "--out", key) // never overwrites
	mustRun(t, 2, nil, "audit", "anchor", "--store", db)                    // --key required

	// An older copy of the store (116 events), then more events and an
	// anchor of the newer head.
	old := filepath.Join(dir, "old.db")
	copyStore(t, db, old)
	appendEvents(t, db)
	anchor := filepath.Join(dir, "anchor.json")
	out, _ = mustRun(t, 0, nil, "audit", "anchor", "--store", db, "--key", key, "--out", anchor)
	if !strings.Contains(out, "anchored pos 117") {
		t.Fatalf("anchor: %s", out)
	}
	out, _ = mustRun(t, 0, nil, "audit", "verify", "--store", db, "--anchor", anchor, "--public-key", key+".pub")
	if !strings.Contains(out, "ok: anchor "+anchor+" (pos 117") {
		t.Fatalf("verify --anchor: %s", out)
	}
	head, _ := mustRun(t, 0, nil, "audit", "head", "--store", db)

	// Truncate the tail: intact without --head, caught with it.
	cut := filepath.Join(dir, "cut.db")
	copyStore(t, db, cut)
	tamper(t, cut, "DELETE FROM events WHERE pos > 113")
	out, _ = mustRun(t, 0, nil, "audit", "verify", "--store", cut)
	if !strings.Contains(out, "113 events") {
		t.Fatalf("verify of a cut store without --head: %s", out)
	}
	_, errs := mustRun(t, 1, nil, "audit", "verify", "--store", cut, "--head", strings.TrimSpace(head))
	if !strings.Contains(errs, "event pos 113 (operation demo-submit-report seq 8): head not found") {
		t.Fatalf("verify --head of a cut store: %s", errs)
	}
	_, errs = mustRun(t, 1, nil, "audit", "verify", "--store", cut, "--anchor", anchor)
	if !strings.Contains(errs, "anchor mismatch") {
		t.Fatalf("verify --anchor of a cut store: %s", errs)
	}

	// Roll the store back to the older copy.
	os.Remove(db + "-wal")
	os.Remove(db + "-shm")
	copyStore(t, old, db)
	mustRun(t, 0, nil, "audit", "verify", "--store", db)
	_, errs = mustRun(t, 1, nil, "audit", "verify", "--store", db, "--anchor", anchor)
	if !strings.Contains(errs, "covers pos 117 but the store ends at pos 116") {
		t.Fatalf("verify --anchor of a rolled-back store: %s", errs)
	}

	// A forged anchor (another key) and an altered one.
	other := filepath.Join(dir, "other.pem")
	mustRun(t, 0, nil, "audit", "keygen", "--kind", "anchor", "--out", other)
	_, errs = mustRun(t, 1, nil, "audit", "verify", "--store", db, "--anchor", anchor, "--public-key", other+".pub")
	if !strings.Contains(errs, "not by the trusted key") {
		t.Fatalf("anchor under another key: %s", errs)
	}
	b, _ := os.ReadFile(anchor)
	altered := filepath.Join(dir, "altered.json")
	os.WriteFile(altered, bytes.Replace(b, []byte(`"pos": 117`), []byte(`"pos": 116`), 1), 0o644)
	_, errs = mustRun(t, 1, nil, "audit", "verify", "--store", db, "--anchor", altered)
	if !strings.Contains(errs, "signature is invalid") {
		t.Fatalf("altered anchor: %s", errs)
	}
}

// copyStore copies a closed store file.
func copyStore(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// appendEvents records one decision on the demo's escalated deadline case:
// one more event.
func appendEvents(t *testing.T, db string) {
	t.Helper()
	mustRun(t, 0, nil, "decide", "demo-6-exp_late", "abandon", "--by", "alice", "--store", db,
		"--contract", filepath.Join(filepath.Dir(db), "demo-export.yaml"))
}

func TestAuditSealed(t *testing.T) {
	keyDir := t.TempDir()
	key, wrong := filepath.Join(keyDir, "seal.pem"), filepath.Join(keyDir, "wrong.pem")
	out, _ := mustRun(t, 0, nil, "audit", "keygen", "--kind", "seal", "--out", key)
	mustRun(t, 0, nil, "audit", "keygen", "--kind", "seal", "--out", wrong)
	k, err := audit.LoadSealKey(key)
	if err != nil || !strings.Contains(out, "key id "+k.KeyID()) {
		t.Fatalf("keygen seal: %s %v", out, err)
	}
	dir := demoStore(t, k)
	db := filepath.Join(dir, "demo.db")
	contractFile := filepath.Join(dir, "demo-export.yaml")

	// Verify and head need no key.
	out, _ = mustRun(t, 0, nil, "audit", "verify", "--store", db)
	if !strings.Contains(out, "116 events") {
		t.Fatalf("verify: %s", out)
	}
	head, _ := mustRun(t, 0, nil, "audit", "head", "--store", db)

	// Reading payloads needs the right key: a clear error, exit 2.
	_, errs := mustRun(t, 2, nil, "audit", "show", "demo-1-exp_success", "--store", db)
	if !strings.Contains(errs, "sealed; give the audit key") {
		t.Fatalf("show without key: %s", errs)
	}
	_, errs = mustRun(t, 2, nil, "audit", "show", "demo-1-exp_success", "--store", db, "--audit-key", wrong)
	if !strings.Contains(errs, "sealed with another audit key") {
		t.Fatalf("show with the wrong key: %s", errs)
	}
	mustRun(t, 2, nil, "audit", "export", "--store", db)
	out, _ = mustRun(t, 0, map[string]string{"POLLWARDEN_AUDIT_KEY_FILE": key}, "audit", "show", "demo-1-exp_success", "--store", db)
	plain := filepath.Join(demoStore(t, nil), "demo.db")
	if want, _ := mustRun(t, 0, nil, "audit", "show", "demo-1-exp_success", "--store", plain); out != want {
		t.Fatalf("sealed show:\n%s\nwant\n%s", out, want)
	}

	// Writing with a missing or wrong key is refused before anything is
	// written.
	for _, extra := range [][]string{nil, {"--audit-key", wrong}} {
		args := append([]string{"decide", "demo-6-exp_late", "abandon", "--by", "alice", "--store", db, "--contract", contractFile}, extra...)
		_, errs := mustRun(t, 2, nil, args...)
		if !strings.Contains(errs, "nothing was written") {
			t.Fatalf("decide %v: %s", extra, errs)
		}
	}
	if h, _ := mustRun(t, 0, nil, "audit", "head", "--store", db); h != head {
		t.Fatalf("a refused decide moved the head")
	}

	// With the key: the note is recorded, sealed, and nowhere in the file.
	const note = "zq-distinctive-note-5b2e"
	mustRun(t, 0, nil, "decide", "demo-6-exp_late", "abandon", "--by", "alice", "--note", note, "--store", db,
		"--contract", contractFile, "--audit-key", key)
	for _, p := range []string{db, db + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(note)) {
			t.Fatalf("the sealed note is in plain text in %s", p)
		}
	}
	out, _ = mustRun(t, 0, nil, "audit", "show", "demo-6-exp_late", "--store", db, "--audit-key", key)
	if !strings.Contains(out, "alice (approver) decided abandon") || !strings.Contains(out, note) {
		t.Fatalf("show after decide: %s", out)
	}

	// Export: JSON Lines, chain order, every field.
	exp := filepath.Join(dir, "export.jsonl")
	mustRun(t, 0, nil, "audit", "export", "--store", db, "--audit-key", key, "--out", exp)
	f, err := os.Open(exp)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	prev, n := "", int64(0)
	for sc.Scan() {
		n++
		var line map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		for _, k := range []string{"operation_id", "seq", "pos", "at", "kind", "data", "prev_hash", "hash"} {
			if _, ok := line[k]; !ok {
				t.Fatalf("line %d has no %s: %s", n, k, sc.Bytes())
			}
		}
		var pos int64
		var ph, h string
		json.Unmarshal(line["pos"], &pos)
		json.Unmarshal(line["prev_hash"], &ph)
		json.Unmarshal(line["hash"], &h)
		if pos != n || ph != prev {
			t.Fatalf("line %d: pos %d prev_hash %s, want pos %d after %s", n, pos, ph, n, prev)
		}
		prev = h
	}
	if n != 117 {
		t.Fatalf("%d lines exported, want 117", n)
	}
	if st, _ := os.Stat(exp); st.Mode().Perm() != 0o600 {
		t.Fatalf("export file mode %v", st.Mode())
	}
	out, _ = mustRun(t, 0, nil, "audit", "export", "--store", db, "--audit-key", key, "--after", "113", "--operation", "demo-6-exp_late")
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, `"pos":117`) || !strings.Contains(out, note) {
		t.Fatalf("export --after 113 --operation: %s", out)
	}

	// A sealed payload altered in the file no longer opens: show marks it
	// and the break, and prints the rest.
	// (The byte put in differs from the one it replaces, whatever the
	// random nonce and ciphertext hold there.)
	tamper(t, db, "UPDATE events SET payload = CAST(substr(payload, 1, 40) || CASE WHEN substr(payload, 41, 1) = 'x' THEN 'y' ELSE 'x' END || substr(payload, 42) AS BLOB) WHERE pos = 3")
	code, out, _ := run(t, nil, "audit", "show", "demo-1-exp_success", "--store", db, "--audit-key", key)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// The request whose answer cannot be read is told alone, then the
	// unreadable answer, the break, and the rest of the story.
	if code != 1 || len(lines) != 9 || !strings.HasSuffix(lines[1], "status request 1 of 8 sent") ||
		!strings.Contains(lines[2], "?? response_received event, payload unreadable") ||
		!strings.HasPrefix(lines[3], "!! chain broken at event 3 (pos 3): hash mismatch") ||
		!strings.Contains(lines[8], "succeeded after 4 of 8") {
		t.Fatalf("show of an altered sealed payload: exit %d\n%s", code, out)
	}
	mustRun(t, 1, nil, "audit", "verify", "--store", db)

	// A plain store refuses to start sealing.
	plain = filepath.Join(demoStore(t, nil), "demo.db")
	_, errs = mustRun(t, 2, nil, "decide", "demo-6-exp_late", "abandon", "--by", "alice", "--store", plain,
		"--contract", contractFile, "--audit-key", key)
	if !strings.Contains(errs, "cannot start sealing") {
		t.Fatalf("key on a plain store: %s", errs)
	}
	// ...but reads fine with a key set in the environment.
	mustRun(t, 0, map[string]string{"POLLWARDEN_AUDIT_KEY_FILE": key}, "audit", "show", "demo-1-exp_success", "--store", plain)
}
