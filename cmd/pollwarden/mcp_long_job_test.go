package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	pwmcp "github.com/pollwarden/pollwarden/mcp"
	"github.com/pollwarden/pollwarden/policy"
)

// lowest is a Rand at the bottom of its range: policy.Jitter then gives
// the shortest delay R5 allows, half the raw delay.
type lowest struct{}

func (lowest) Float64() float64 { return 0 }

// requestsBefore returns the smallest n such that the n-th status request
// cannot go out before d under backoff b: the first goes at once, and
// each later one at least the shortest jittered delay after the previous
// answer. It uses the policy's own functions, so it follows them.
func requestsBefore(b pollwarden.Backoff, d time.Duration) (int, time.Duration) {
	var at time.Duration
	n := 1
	for at < d {
		at += policy.Jitter(policy.RawDelay(b, n), lowest{})
		n++
	}
	return n, at
}

// TestFortyMinuteJobInThreeToolCalls is the issue's "a 40-minute job must
// be waitable with at most three tool calls", over the real binary's
// stdio with the official SDK client.
//
// How it maps to 40 minutes: the job on the fake provider answers
// "running" to its first n status requests and "succeeded" to the next,
// where n is chosen so that under a contract backing off from 5 s to 120 s
// the n-th request cannot go out before 40 minutes (each delay is at least
// half its raw value, R5; requestsBefore does the sum with the policy's
// functions). The server runs that contract with every backoff duration
// divided by 1000 (5 ms to 120 ms): the raw delay and the jitter are
// linear in them, so the same n requests go out in the same pattern, in
// seconds instead of 40 minutes. The deadline and the request timeout are
// not scaled and are long enough that a slow machine cannot end the test
// with deadline_exceeded; they are not what it is about. The budget holds
// the n+1 requests.
//
// The client calls watch_job, subscribes to the operation's resource,
// sends nothing until notifications/resources/updated arrives, then calls
// get_job once: two tool calls. Every request the client sent is recorded
// and checked, so a client poll would fail the test.
func TestFortyMinuteJobInThreeToolCalls(t *testing.T) {
	t.Parallel()
	const scale = 1000
	unscaled := pollwarden.Backoff{Base: 5 * time.Second, Max: 120 * time.Second}
	n, earliest := requestsBefore(unscaled, 40*time.Minute)
	if earliest < 40*time.Minute {
		t.Fatalf("request %d could go out at %s", n, earliest)
	}
	t.Logf("under backoff %s..%s, status request %d goes out %s after the first at the earliest; the job answers running to %d requests",
		unscaled.Base, unscaled.Max, n, earliest, n)

	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	steps := slices.Repeat([]fp.Step{fp.State("running", nil)}, n)
	srv.Script("long", append(steps, fp.Succeeded("https://files.example.com/exports/long.csv"))...)
	// The first status request is held until the subscription is
	// registered, so the phase change cannot come before it.
	subscribed := make(chan struct{})
	srv.OnRequest(func(string) { <-subscribed })
	released := false
	release := func() {
		if !released {
			released = true
			close(subscribed)
		}
	}
	defer release()

	dir := t.TempDir()
	contracts := filepath.Join(dir, "contracts")
	if err := os.Mkdir(contracts, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: long-export
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:LONG_TOKEN"}
  timeout: 30s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: %s, max: %s}
limits: {deadline: 60m, max_status_requests: %d, max_transport_failures: 3, max_rate_limited: 3}
`, srv.URL(), unscaled.Base/scale, unscaled.Max/scale, n+5)
	if err := os.WriteFile(filepath.Join(contracts, "long-export.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startMCP(t, []string{"mcp", "--store", filepath.Join(dir, "pw.db"), "--contracts", contracts}, []string{"LONG_TOKEN=" + canary})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Tool call 1.
	_, w, isErr := h.call("watch_job", `{"contract": "long-export", "job_id": "long"}`)
	id, _ := w["operation_id"].(string)
	if isErr || w["phase"] != "waiting" || id == "" {
		t.Fatalf("watch_job: %v", w)
	}
	uri := pwmcp.ResourceURI(id)
	h.subscribe(ctx, uri)
	before := h.methods()
	release()

	select {
	case got := <-h.updated:
		if got != uri {
			t.Fatalf("notified about %s, want %s", got, uri)
		}
	case <-ctx.Done():
		t.Fatalf("no notifications/resources/updated; the provider saw %d requests; stderr: %s", srv.Count("long"), h.stderr.String())
	}
	if sent := h.methods(); !slices.Equal(sent, before) {
		t.Fatalf("the client sent %v while it waited", sent[len(before):])
	}

	// Tool call 2.
	_, final, isErr := h.call("get_job", fmt.Sprintf(`{"operation_id": %q}`, id))
	if isErr || final["phase"] != "succeeded" || final["status_requests_used"] != float64(n+1) {
		t.Fatalf("get_job: %v", final)
	}
	if got := srv.Count("long"); got != n+1 {
		t.Fatalf("the provider saw %d status requests, want %d", got, n+1)
	}
	var tools []string
	for _, m := range h.methods() {
		if name, ok := strings.CutPrefix(m, "tools/call "); ok {
			tools = append(tools, name)
		}
	}
	if len(tools) > 3 || !slices.Equal(tools, []string{"watch_job", "get_job"}) {
		t.Fatalf("tool calls %v, want watch_job then get_job", tools)
	}
	t.Logf("client requests: %v", h.methods())
}
