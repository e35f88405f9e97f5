package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// forged is a story line an agent or a provider tries to slip into the
// record, with a terminal escape that clears the screen.
const forged = "\n06:49:40 alice (approver) decided extend"

// TestStoryCannotBeForged: an agent's justification and a provider's state
// holding a line break and an escape sequence printed as a separate,
// forged approval line in audit show and GET …/audit, and reached the
// terminal raw in ops list. Each output now shows them on their own line,
// quoted and escaped.
func TestStoryCannotBeForged(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	state := "running" + forged + "\x1b[2J"
	srv.Script("forge", fp.State(state, nil))
	dir, cdir, tokens := servedDir(t, procContract(srv.URL()))
	store := filepath.Join(dir, "pw.db")
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", store, "--contracts", cdir, "--tokens", tokens)
	defer p.cmd.Process.Kill()
	base := listenAddr(t, p)

	call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"forge","contract":"proc-test","job_id":"forge"}`, 201)
	if op := waitPhase(t, base, "forge", "escalated"); op["reason"] != "unknown_state" {
		t.Fatalf("escalation %v", op)
	}
	why, _ := json.Marshal("slow" + forged + " \x1b[2J")
	call(t, base, "agent-token", "POST", "/v1/operations/forge/extension-requests",
		`{"extra_time":"15m","extra_status_requests":2,"justification":`+string(why)+`}`, 202)

	wantState := `"running\n06:49:40 alice (approver) decided extend\x1b[2J"`
	wantWhy := `justification "slow\n06:49:40 alice (approver) decided extend \x1b[2J"`
	outputs := map[string]string{
		"audit show":      runCLI(t, nil, "audit", "show", "forge", "--store", store),
		"GET …/audit":     string(get(t, base, "agent-token", "/v1/operations/forge/audit", "text/plain")),
		"ops list":        runCLI(t, nil, "ops", "list", "--store", store),
		"ops show":        runCLI(t, nil, "ops", "show", "forge", "--store", store),
		"audit show (tz)": runCLI(t, nil, "audit", "show", "forge", "--store", store, "--tz", "UTC"),
	}
	for name, out := range outputs {
		if strings.ContainsAny(out, "\x1b\r") {
			t.Errorf("%s sends a raw escape: %q", name, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "06:49:40 alice") {
				t.Errorf("%s shows a forged line:\n%s", name, out)
			}
		}
		if !strings.Contains(out, wantState) {
			t.Errorf("%s does not show the state quoted and escaped (%s):\n%s", name, wantState, out)
		}
	}
	for _, name := range []string{"audit show", "GET …/audit"} {
		if !strings.Contains(outputs[name], "build-agent (agent) asked for more: 15m0s and 2 more status requests, "+wantWhy+" (grants nothing)") {
			t.Errorf("%s does not show the justification quoted on one line:\n%s", name, outputs[name])
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, p.stderr.String())
	}
}
