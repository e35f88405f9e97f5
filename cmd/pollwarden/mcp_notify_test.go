package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestMCPSendsNotifications: `pollwarden mcp --webhooks FILE` (stdio)
// sends an escalation of a job watched through its tools to a Slack
// receiver, then the request's expiry, as serve does.
func TestMCPSendsNotifications(t *testing.T) {
	t.Parallel()
	const slackToken = "slack-canary-Mc9Pq3-token"
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("slow", fp.State("running", nil))
	var mu sync.Mutex
	var posts [][]byte
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, b)
		mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	defer slack.Close()

	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: mcp-notify
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:MN_TOKEN"}
  timeout: 1s
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
backoff: {base: 150ms, max: 300ms}
limits: {deadline: 60s, max_status_requests: 1}
escalation: {expire_after: 2s}
`, srv.URL())
	if err := os.WriteFile(filepath.Join(cdir, "c.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks := "console_url: https://pollwarden.example\nwebhooks:\n  - {name: chat, format: slack, url: env:MN_SLACK}\nretry: {base: 100ms, max: 300ms}\n"
	if err := os.WriteFile(filepath.Join(dir, "webhooks.yaml"), []byte(hooks), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startMCP(t, []string{"mcp", "--store", filepath.Join(dir, "pw.db"), "--contracts", cdir, "--webhooks", filepath.Join(dir, "webhooks.yaml")},
		[]string{"MN_TOKEN=" + canary, "MN_SLACK=" + slack.URL + "/services/" + slackToken})
	if _, w, isErr := h.call("watch_job", `{"contract": "mcp-notify", "job_id": "slow"}`); isErr {
		t.Fatalf("watch_job: %v", w)
	}
	waitFor(t, "the escalation and its expiry on Slack", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(posts) >= 2 && bytes.Contains(posts[len(posts)-1], []byte("Decision request expired after 2s; default applied: abandon"))
	})
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Contains(posts[0], []byte("Decision needed: ")) || !bytes.Contains(posts[0], []byte("https://pollwarden.example/ui/operations/")) {
		t.Fatalf("first Slack message:\n%s", posts[0])
	}
	for _, p := range append(posts, []byte(h.stderr.String())) {
		if bytes.Contains(p, []byte(canary)) || bytes.Contains(p, []byte(slackToken)) {
			t.Fatalf("a canary reached a message or the log:\n%s", p)
		}
	}
}
