package tsclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

const peerToken = "peer-canary-Zq81xLw0"

// taskPeer is the TypeScript SDK's own tasks server (taskserver.mjs),
// run by node on a loopback port.
type taskPeer struct {
	t    *testing.T
	base string // scheme://host:port, the built-in's base_url
}

func startTaskPeer(t *testing.T, sse bool) *taskPeer {
	t.Helper()
	requireNode(t)
	args := []string{"taskserver.mjs"}
	if sse {
		args = append(args, "--sse")
	}
	cmd := exec.Command("node", args...)
	cmd.Env = append(os.Environ(), "TASK_SERVER_TOKEN="+peerToken)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, addr, ok := strings.Cut(sc.Text(), "listening on "); ok {
				lines <- strings.TrimSuffix(addr, "/mcp")
			}
		}
	}()
	select {
	case base := <-lines:
		return &taskPeer{t: t, base: base}
	case <-time.After(20 * time.Second):
		t.Fatalf("the task server did not start: %s", stderr.String())
	}
	return nil
}

// counts is how many requests of each JSON-RPC method the peer received.
func (p *taskPeer) counts() map[string]int {
	p.t.Helper()
	var m map[string]int
	p.admin("/counts", &m)
	return m
}

// forgetSessions closes every session, as a server restart would.
func (p *taskPeer) forgetSessions() { p.t.Helper(); p.admin("/forget-sessions", nil) }

func (p *taskPeer) admin(path string, into any) {
	p.t.Helper()
	req, _ := http.NewRequest("GET", p.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+peerToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	if into != nil {
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			p.t.Fatal(err)
		}
	}
}

// peerRun is one operation of the mcp-task built-in, moved to the peer
// by base_url as a user would, through the real controller, prober and
// SQLite store at the real clock.
type peerRun struct {
	ctl   *controller.Controller
	ex    *contract.Loaded
	store *sqlite.Store
}

func newPeerRun(t *testing.T, p *taskPeer, token string) *peerRun {
	t.Helper()
	src := fmt.Sprintf(`version: 1
extends: mcp-task
name: mcp-task-peer
base_url: %q
status:
  credential: {header: Authorization, scheme: Bearer, secret: "env:PEER_TOKEN"}
  timeout: 5s
backoff: {base: 100ms, max: 400ms}
limits: {deadline: 1m, max_status_requests: 60, max_transport_failures: 3, max_rate_limited: 3}
`, p.base)
	c, err := contract.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	getenv := func(string) (string, bool) { return token, true }
	ctl := controller.New(controller.Options{Store: st, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: time.Now, Getenv: getenv})})
	return &peerRun{ctl: ctl, ex: ex, store: st}
}

// toolCall is a task-augmented tools/call of the peer's delay tool.
func toolCall(duration int, outcome string) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delay",`+
		`"arguments":{"duration":%d,"outcome":%q},"task":{"ttl":60000}}}`, duration, outcome)
}

func (r *peerRun) submit(t *testing.T, id string, body []byte) *pollwarden.Operation {
	t.Helper()
	op, err := r.ctl.SubmitJob(context.Background(), r.ex, policy.NewParams{ID: id}, body)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func (r *peerRun) wait(t *testing.T, id string) (*pollwarden.Operation, string) {
	t.Helper()
	final, err := r.ctl.Wait(context.Background(), r.ex, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	events, err := r.store.EventList(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	story := strings.Join(audit.Story(events, time.UTC), "\n")
	if strings.Contains(story, peerToken) {
		t.Fatalf("the credential reached the story:\n%s", story)
	}
	return final, story
}

// TestMCPTaskBuiltinAgainstTypeScriptServer: the mcp-task built-in
// submits a task-augmented tools/call to the TypeScript SDK's tasks
// server and polls it with tasks/get behind the streamable-HTTP
// handshake, with the server answering JSON and, as the SDK does by
// default, event streams.
func TestMCPTaskBuiltinAgainstTypeScriptServer(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"json", "sse"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // each mode has its own peer, store and controller
			peer := startTaskPeer(t, mode == "sse")
			run := newPeerRun(t, peer, peerToken)

			t.Run("completed", func(t *testing.T) {
				before := peer.counts()
				op := run.submit(t, "ok-"+mode, toolCall(600, "completed"))
				if op.ProviderJobID == "" {
					t.Fatalf("no task id recorded from the create answer: %+v", op)
				}
				final, story := run.wait(t, op.ID)
				if final.Phase != pollwarden.PhaseSucceeded || !strings.Contains(string(final.Result), op.ProviderJobID) {
					t.Fatalf("phase %s result %s, want succeeded with the task id\n%s", final.Phase, final.Result, story)
				}
				after := peer.counts()
				if gets := after["tasks/get"] - before["tasks/get"]; gets != final.StatusRequestsUsed || gets < 2 {
					t.Errorf("the peer saw %d tasks/get, the record %d status requests; want equal, at least 2", gets, final.StatusRequestsUsed)
				}
				if calls := after["tools/call"] - before["tools/call"]; calls != 1 {
					t.Errorf("the peer saw %d tools/call, want 1", calls)
				}
			})
			t.Run("failed", func(t *testing.T) {
				final, story := run.wait(t, run.submit(t, "fail-"+mode, toolCall(200, "failed")).ID)
				if final.Phase != pollwarden.PhaseFailed || final.LastState != "failed" {
					t.Fatalf("phase %s state %s, want failed\n%s", final.Phase, final.LastState, story)
				}
			})
			t.Run("input required escalates", func(t *testing.T) {
				final, story := run.wait(t, run.submit(t, "ask-"+mode, toolCall(200, "input_required")).ID)
				if final.Phase != pollwarden.PhaseEscalated || final.Reason != pollwarden.ReasonUnknownState || final.LastState != "input_required" {
					t.Fatalf("phase %s/%s state %s, want escalated unknown_state at input_required\n%s", final.Phase, final.Reason, final.LastState, story)
				}
			})
			t.Run("unknown task ends the wait", func(t *testing.T) {
				op, err := run.ctl.Start(context.Background(), run.ex, policy.NewParams{ID: "unknown-" + mode, ProviderJobID: "no-such-task"})
				if err != nil {
					t.Fatal(err)
				}
				final, story := run.wait(t, op.ID)
				if final.Phase != pollwarden.PhaseFailed || final.LastState != "task_not_found" || final.StatusRequestsUsed != 1 {
					t.Fatalf("phase %s state %s after %d requests, want failed task_not_found after 1\n%s",
						final.Phase, final.LastState, final.StatusRequestsUsed, story)
				}
			})
			t.Run("a lost session is a transport failure, then a new session", func(t *testing.T) {
				op := run.submit(t, "lost-"+mode, toolCall(60000, "completed"))
				peer.forgetSessions()
				before := peer.counts()
				final, story := run.wait(t, op.ID)
				if !strings.Contains(story, "the provider ended the session (404)") || final.TransportFailuresUsed != 1 {
					t.Fatalf("story lacks the ended session, or %d transport failures (want 1):\n%s", final.TransportFailuresUsed, story)
				}
				if n := peer.counts()["initialize"] - before["initialize"]; n != 1 {
					t.Errorf("%d new sessions, want 1", n)
				}
				// The SDK binds a task to the session that created it: from
				// the new session it is not found, and the wait ends.
				if final.Phase != pollwarden.PhaseFailed || final.LastState != "task_not_found" {
					t.Errorf("phase %s state %s, want failed task_not_found (the SDK's session-bound tasks)\n%s", final.Phase, final.LastState, story)
				}
			})
		})
	}
}

// TestMCPTaskBuiltinRefusedCredential: an initialize the server refuses
// (401) is the credential refused: authorization_denied, and no tasks/get
// is sent.
func TestMCPTaskBuiltinRefusedCredential(t *testing.T) {
	t.Parallel()
	peer := startTaskPeer(t, false)
	run := newPeerRun(t, peer, "not-the-token")
	op, err := run.ctl.Start(context.Background(), run.ex, policy.NewParams{ID: "denied", ProviderJobID: "any-task"})
	if err != nil {
		t.Fatal(err)
	}
	final, story := run.wait(t, op.ID)
	if final.Phase != pollwarden.PhaseEscalated || final.Reason != pollwarden.ReasonAuthorizationDenied {
		t.Fatalf("phase %s/%s, want escalated authorization_denied\n%s", final.Phase, final.Reason, story)
	}
	if n := peer.counts()["tasks/get"]; n != 0 {
		t.Fatalf("%d tasks/get sent under a refused session", n)
	}
}

// names is, by JSON-RPC method, whether each request's Mcp-Name header
// matched its params.taskId.
func (p *taskPeer) names() map[string][]bool {
	p.t.Helper()
	var m map[string][]bool
	p.admin("/names", &m)
	return m
}

func (r *peerRun) fetch(t *testing.T, id string) (string, error, string) {
	t.Helper()
	var out strings.Builder
	_, err := r.ctl.FetchResult(context.Background(), r.ex, id, pollwarden.Actor{Name: "ana", Role: pollwarden.RoleAgent}, &out)
	events, lerr := r.store.EventList(context.Background(), id)
	if lerr != nil {
		t.Fatal(lerr)
	}
	story := strings.Join(audit.Story(events, time.UTC), "\n")
	if strings.Contains(out.String()+story, peerToken) {
		t.Fatalf("the credential reached the result or the story")
	}
	return out.String(), err, story
}

// TestMCPTaskBuiltinResultAndCancel: the built-in fetches a completed
// task's result with tasks/result and cancels a working one with
// tasks/cancel, on the session that created the task and with Mcp-Name
// naming it, against the TypeScript SDK's tasks server. A JSON-RPC error
// instead of the result is a failed fetch, recorded, nothing handed over.
func TestMCPTaskBuiltinResultAndCancel(t *testing.T) {
	for _, mode := range []string{"json", "sse"} {
		t.Run(mode, func(t *testing.T) {
			peer := startTaskPeer(t, mode == "sse")
			run := newPeerRun(t, peer, peerToken)

			op := run.submit(t, "res-"+mode, toolCall(300, "completed"))
			if final, story := run.wait(t, op.ID); final.Phase != pollwarden.PhaseSucceeded {
				t.Fatalf("phase %s\n%s", final.Phase, story)
			}
			before := peer.counts()
			got, err, story := run.fetch(t, op.ID)
			if err != nil {
				t.Fatalf("fetch: %v\n%s", err, story)
			}
			var answer struct {
				Result struct {
					Content []struct{ Text string }
				}
			}
			if json.Unmarshal([]byte(got), &answer) != nil || len(answer.Result.Content) != 1 || answer.Result.Content[0].Text != "Completed 300ms delay" {
				t.Fatalf("fetched %q, want the tool's CallToolResult", got)
			}
			after := peer.counts()
			if after["tasks/result"]-before["tasks/result"] != 1 || after["initialize"] != before["initialize"] {
				t.Errorf("counts %v → %v: want one tasks/result on the same session", before, after)
			}
			if !strings.Contains(story, fmt.Sprintf("result fetched: %d bytes", len(got))) {
				t.Errorf("story lacks the fetch:\n%s", story)
			}

			// From a new session the SDK does not know the task: its
			// JSON-RPC error is a failed fetch, not a result.
			peer.forgetSessions()
			if _, err, _ := run.fetch(t, op.ID); err == nil {
				t.Fatal("a fetch on an ended session succeeded")
			}
			got, err, story = run.fetch(t, op.ID)
			if !errors.Is(err, controller.ErrResultFailed) || !strings.Contains(err.Error(), "answered an error instead of the result") || got != "" {
				t.Fatalf("fetch from another session: %v, handed over %q", err, got)
			}
			if !strings.Contains(story, "result fetch failed: the provider answered an error instead of the result") {
				t.Errorf("story lacks the failed fetch:\n%s", story)
			}

			long := run.submit(t, "cancel-"+mode, toolCall(60000, "completed"))
			cancelled, err := run.ctl.Cancel(context.Background(), run.ex, long.ID, policy.DecisionParams{Actor: pollwarden.Actor{Name: "ann", Role: pollwarden.RoleApprover}})
			if err != nil {
				t.Fatal(err)
			}
			if cancelled.Phase != pollwarden.PhaseCancelled || peer.counts()["tasks/cancel"] != 1 {
				t.Fatalf("phase %s after cancel, %d tasks/cancel; want cancelled by the answer, one call", cancelled.Phase, peer.counts()["tasks/cancel"])
			}
			for method, matched := range peer.names() {
				for i, ok := range matched {
					if !ok {
						t.Errorf("%s request %d: Mcp-Name is not the task id", method, i)
					}
				}
			}
			if n := peer.names(); len(n["tasks/result"]) == 0 || len(n["tasks/cancel"]) == 0 || len(n["tasks/get"]) == 0 {
				t.Errorf("names seen: %v", n)
			}
		})
	}
}
