package tsclient_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestTypeScriptTaskClients runs tasks.mjs: the TypeScript SDK's
// experimental 2025-11-25 tasks and @modelcontextprotocol/ext-tasks (the
// io.modelcontextprotocol/tasks extension), over stdio and over the
// daemon's streamable HTTP, with a restart of the server while a task is
// outstanding.
func TestTypeScriptTaskClients(t *testing.T) {
	t.Parallel()
	requireNode(t)
	if _, err := os.Stat(filepath.Join("node_modules", "@modelcontextprotocol/ext-tasks", "package.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node_modules lacks @modelcontextprotocol/ext-tasks: run `npm ci --no-audit --no-fund` in mcp/tsclient")
		}
		t.Skip("node_modules lacks @modelcontextprotocol/ext-tasks")
	}
	bin := buildPollwarden(t)
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, bin)
		raw := filepath.Join(r.dir, "transcript.jsonl")
		out := r.runTasks(func() string { return "ok" }, "PW_TRANSPORT=stdio", "PW_BIN="+r.bin, "PW_TRANSCRIPT="+raw,
			"PW_ARGS="+jsonString(r.mcpArgs()), "PW_SERVER_ENV="+jsonString(map[string]string{"MCP_TEST_TOKEN": canary}))
		r.noCanary(out)
		if dst := os.Getenv("POLLWARDEN_TASKS_TRANSCRIPT"); dst != "" {
			writeTranscript(t, raw, dst)
		}
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, bin)
		d := r.startDaemon()
		out := r.runTasks(func() string {
			d.kill()
			d = r.startDaemon()
			return d.base + "/mcp"
		}, "PW_TRANSPORT=http", "PW_URL="+d.base+"/mcp", "PW_TOKEN="+agentToken)
		r.noCanary(out, d.logs())
	})
}

// daemon is one `pollwarden serve` process on the rig's store.
type daemon struct {
	cmd            *exec.Cmd
	base           string
	stdout, stderr *syncBuffer
}

func (d *daemon) logs() string { return d.stdout.String() + d.stderr.String() }

// kill ends the daemon abruptly, as a crash would.
func (d *daemon) kill() {
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
}

func (r *rig) startDaemon() *daemon {
	t := r.t
	t.Helper()
	cmd := exec.Command(r.bin, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(r.dir, "pw.db"),
		"--contracts", r.contracts, "--tokens", filepath.Join(r.dir, "tokens.yaml"))
	cmd.Env = append(os.Environ(), "MCP_TEST_TOKEN="+canary)
	d := &daemon{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = d.stdout, d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	d.base = listenAddr(t, d.stdout, d.stderr)
	return d
}

func wantTaskChecks() []string {
	return []string{"core initialize", "core taskSupport", "core task created", "core working message", "core completed",
		"core input_required", "core result at input_required", "core tasks/cancel", "core tasks/list",
		"core task before restart", "core tasks/get after restart", "core completed after restart",
		"ext advertised", "ext task created", "ext completed", "ext immediate", "canary"}
}

// runTasks runs tasks.mjs and plays the provider and the operator: on
// "succeed" the named job succeeds, on "cancelled" it checks that no
// cancel reached the provider, on "restart" it calls restart and answers
// with what it returns.
func (r *rig) runTasks(restart func() string, env ...string) string {
	t := r.t
	t.Helper()
	for _, j := range []string{"task-ok", "task-stuck", "task-restart", "ext-ok"} {
		r.srv.Script(j, fp.State("running", nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	logFile := filepath.Join(r.dir, "tasks-received.jsonl")
	cmd := exec.CommandContext(ctx, "node", "tasks.mjs")
	cmd.Env = append(os.Environ(), append(env, "PW_CONTRACT="+contractName, "PW_CANARY="+canary, "PW_LOG="+logFile)...)
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
	var printed strings.Builder
	var last string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		printed.WriteString(line + "\n")
		last = line
		var step struct {
			Await string `json:"await"`
			JobID string `json:"job_id"`
		}
		if json.Unmarshal([]byte(line), &step) != nil || step.Await == "" {
			continue
		}
		answer := "ok"
		switch step.Await {
		case "succeed":
			r.srv.Script(step.JobID, fp.Succeeded(reportURL))
		case "cancelled":
			if n := r.srv.Cancels(step.JobID); n != 0 {
				t.Errorf("cancelling the task sent %d cancel requests to the provider, want none", n)
			}
		case "restart":
			answer = restart()
		default:
			t.Errorf("tasks.mjs asked for an unknown step %q", step.Await)
		}
		if _, err := io.WriteString(stdin, answer+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	_ = stdin.Close()
	waitErr := cmd.Wait()
	var rep report
	if err := json.Unmarshal([]byte(last), &rep); err != nil || !rep.OK || waitErr != nil {
		t.Fatalf("tasks.mjs: %v; report %s\nerror: %s\nstderr: %s", waitErr, last, rep.Error, stderr.String())
	}
	for _, c := range wantTaskChecks() {
		if !slices.Contains(rep.Checks, c) {
			t.Fatalf("tasks.mjs skipped %q; ran %v", c, rep.Checks)
		}
	}
	received, _ := os.ReadFile(logFile)
	if len(received) == 0 {
		t.Fatal("tasks.mjs logged no message received")
	}
	return printed.String() + stderr.String() + string(received)
}

// writeTranscript renders the messages tasks.mjs exchanged over stdio as
// the Markdown page docs/mcp-tasks-transcript.md (regenerated with
// POLLWARDEN_TASKS_TRANSCRIPT=$PWD/docs/mcp-tasks-transcript.md); long
// messages are cut.
func writeTranscript(t *testing.T, raw, dst string) {
	t.Helper()
	b, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	page.WriteString("# MCP tasks: a transcript from the TypeScript clients\n\n" +
		"Every message between `pollwarden mcp` (stdio) and the clients of `mcp/tsclient/tasks.mjs`: the TypeScript SDK 1.32.2 " +
		"(`client.experimental.tasks`, MCP 2025-11-25 tasks), then `@modelcontextprotocol/ext-tasks` 0.2.2 (the " +
		"`io.modelcontextprotocol/tasks` extension, 2026-07-28 request framing). The server is restarted once, while the task " +
		"`ts-task-restart` is outstanding (the second `initialize`). Captured by `TestTypeScriptTaskClients/stdio` with " +
		"`POLLWARDEN_TASKS_TRANSCRIPT` set; messages longer than 1500 characters are cut.\n")
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct {
			Dir string          `json:"dir"`
			M   json.RawMessage `json:"m"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, e.M, "", "  "); err != nil {
			t.Fatal(err)
		}
		text := pretty.String()
		if r := []rune(text); len(r) > 1500 {
			text = string(r[:1500]) + fmt.Sprintf("\n… (%d more characters)", len(r)-1500)
		}
		arrow := "client → server"
		if e.Dir == "server" {
			arrow = "server → client"
		}
		fmt.Fprintf(&page, "\n%s\n\n```text\n%s\n```\n", arrow, text)
	}
	if err := os.WriteFile(dst, []byte(page.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
