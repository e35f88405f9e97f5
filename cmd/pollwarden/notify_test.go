package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/internal/mailsink"
)

// TestServeNotifiesSlackAndEmailThenExpires: a real serve with
// --webhooks sends an escalation to a Slack-compatible receiver and to an
// SMTP server (both on loopback), each with the decision request and the
// console link; nobody decides, so the request expires, the contract's
// default (abandon) is applied, and both are told. The provider
// credential, the Slack URL's token and the SMTP password (canaries)
// appear in no message and no log.
func TestServeNotifiesSlackAndEmailThenExpires(t *testing.T) {
	t.Parallel()
	const slackToken, smtpPass = "slack-canary-Qw7Lp2-token", "smtp-canary-Zr4Kx8-pass"
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("slow", fp.State("running", nil))

	var mu sync.Mutex
	var posts [][]byte
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/services/T0/B0/"+slackToken {
			w.WriteHeader(404)
			return
		}
		mu.Lock()
		posts = append(posts, b)
		mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	defer slack.Close()
	sink := mailsink.Start(t, mailsink.Options{User: "pollwarden", Password: smtpPass})
	secrets := []string{"PW_SLACK_URL=" + slack.URL + "/services/T0/B0/" + slackToken, "PW_SMTP_PASSWORD=" + smtpPass}

	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: notify-test
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 1s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: {base: 150ms, max: 300ms}
limits: {deadline: 60s, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
escalation: {extension: {time: 1m, status_requests: 2}, remind_after: 1s, expire_after: 3s}
`, srv.URL())
	if err := os.WriteFile(filepath.Join(cdir, "notify.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum("agent-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks := fmt.Sprintf(`console_url: https://pollwarden.example
webhooks:
  - name: chat
    format: slack
    url: env:PW_SLACK_URL
  - name: mail
    format: email
    smtp:
      addr: %s
      from: pollwarden@example.com
      to: [oncall@example.com]
      username: pollwarden
      password: env:PW_SMTP_PASSWORD
retry: {base: 100ms, max: 300ms, attempts: 50}
timeout: 2s
`, sink.Addr)
	if err := os.WriteFile(filepath.Join(dir, "webhooks.yaml"), []byte(hooks), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startEnv(t, secrets, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"), "--contracts", cdir,
		"--tokens", filepath.Join(dir, "tokens.yaml"), "--webhooks", filepath.Join(dir, "webhooks.yaml"))
	defer p.cmd.Process.Kill()
	base := listenAddr(t, p)
	call(t, base, "agent-token", "POST", "/v1/operations",
		`{"operation_id":"note-1","contract":"notify-test","job_id":"slow","max_status_requests":1}`, 201)
	final := waitPhase(t, base, "note-1", "failed")

	expired := func(b []byte) bool { return bytes.Contains(b, []byte("Decision request expired")) }
	waitFor(t, "the expiry on Slack and by e-mail", func() bool {
		mu.Lock()
		defer mu.Unlock()
		mails := sink.Mail()
		return len(posts) > 0 && expired(posts[len(posts)-1]) && len(mails) > 0 && expired(mails[len(mails)-1].Data)
	})
	req, _ := http.NewRequest("GET", base+"/v1/operations/note-1/audit", nil)
	req.Header.Set("Authorization", "Bearer agent-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	audit, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"decision request expired after 3s; default applied: abandon", "pollwarden (expiry) (approver) decided abandon"} {
		if !strings.Contains(string(audit), want) {
			t.Fatalf("the audit lacks %q:\n%s", want, audit)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, p.stderr.String())
	}

	mu.Lock()
	defer mu.Unlock()
	first := string(posts[0])
	for _, want := range []string{`"type":"header"`, "Decision needed: note-1 (request_budget_exhausted)",
		`*Status requests*\n1 of 1`, "pollwarden decide note-1 extend", `"url":"https://pollwarden.example/ui/operations/note-1"`} {
		if !strings.Contains(first, want) {
			t.Fatalf("first Slack message lacks %q:\n%s", want, first)
		}
	}
	mails := sink.Mail()
	if m := string(mails[0].Data); !strings.Contains(m, "Subject: Decision needed: note-1") ||
		!strings.Contains(m, "https://pollwarden.example/ui/operations/note-1") || mails[0].User != "pollwarden" {
		t.Fatalf("first e-mail (as %q):\n%s", mails[0].User, m)
	}
	if last := string(posts[len(posts)-1]); !strings.Contains(last, "Decision request expired after 3s; default applied: abandon") {
		t.Fatalf("expiry on Slack:\n%s", last)
	}
	answer, _ := json.Marshal(final)
	all := [][]byte{[]byte(p.stdout.String() + p.stderr.String()), answer, audit}
	all = append(all, posts...)
	for _, m := range mails {
		all = append(all, m.Data)
	}
	for _, b := range all {
		for _, s := range []string{canary, slackToken, smtpPass} {
			if bytes.Contains(b, []byte(s)) {
				t.Fatalf("a canary %s reached a message or the log:\n%s", s, b)
			}
		}
	}
	assertNoCanary(t, dir, p)
}
