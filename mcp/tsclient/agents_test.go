package tsclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestTypeScriptClientAgents runs agents.mjs against `pollwarden mcp` over
// stdio: numbers sent as strings, an escalation's guidance naming the
// console page and the decide command, wait_job's hold of up to 600 s with
// progress notifications, and -32602 for a subscription to a foreign URI.
func TestTypeScriptClientAgents(t *testing.T) {
	t.Parallel()
	requireNode(t)
	r := newRig(t, buildPollwarden(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "agents.mjs")
	cmd.Env = append(os.Environ(), "PW_CONTRACT="+contractName, "PW_BIN="+r.bin, "PW_ARGS="+jsonString(r.mcpArgs()),
		"PW_SERVER_ENV="+jsonString(map[string]string{"MCP_TEST_TOKEN": canary}))
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var last string
	var all strings.Builder
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		last = sc.Text()
		all.WriteString(last + "\n")
		var step struct {
			Await string `json:"await"`
			JobID string `json:"job_id"`
		}
		if json.Unmarshal([]byte(last), &step) != nil || step.Await == "" {
			continue
		}
		if step.Await != "progress" {
			t.Fatalf("agents.mjs asked for an unknown step %q", step.Await)
		}
		r.srv.Script(step.JobID, fp.Succeeded(reportURL))
		if _, err := io.WriteString(stdin, "ok\n"); err != nil {
			t.Fatal(err)
		}
	}
	_ = stdin.Close()
	waitErr := cmd.Wait()
	var rep report
	if err := json.Unmarshal([]byte(last), &rep); err != nil || !rep.OK || waitErr != nil {
		t.Fatalf("agents.mjs: %v; report %s\nstderr: %s", waitErr, last, stderr.String())
	}
	for _, want := range []string{"number as string taken", "number as string refused in words", "escalated",
		"escalation guidance relays the decision", "601 refused", "wait_job 600 accepted", "progress during a 600 s hold",
		"wait_job 600 ends with the phase change", "subscribe foreign URI is -32602"} {
		if !slices.Contains(rep.Checks, want) {
			t.Errorf("agents.mjs skipped %q; ran %v", want, rep.Checks)
		}
	}
	r.noCanary(all.String(), stderr.String())
}
