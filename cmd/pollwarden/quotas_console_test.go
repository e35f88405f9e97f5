package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestQuotasPageInChromium: an approver finds the shared quotas from the
// console's header and reads, by accessible names, the key (its
// reference, never the secret), its limit, what was used and the
// operations waiting on it, each a link to its page, which shows the
// operation's priority; an agent's session is refused the page (403).
func TestQuotasPageInChromium(t *testing.T) {
	t.Parallel()
	browserCtx := browser(t)
	srv := fp.New()
	t.Cleanup(srv.Close)
	srv.RequireToken(canary)
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Two requests per 10 s for four operations: most of them wait.
	c := fmt.Sprintf(`version: 1
name: quota-page
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 2s
state: {path: state, pending: [running], success: [succeeded]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: 1s, max: 2s}
limits: {deadline: 30m, max_status_requests: 40, max_transport_failures: 3, max_rate_limited: 3}
quota: {requests: 2, per: 10s}
`, srv.URL())
	if err := os.WriteFile(filepath.Join(cdir, "quota-page.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n",
		sum("agent-token"), sum("alice-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"),
		"--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"))
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	base := listenAddr(t, p)
	for i := range 4 {
		job := fmt.Sprintf("qp-%d", i)
		srv.Script(job, fp.State("running", nil))
		call(t, base, "agent-token", "POST", "/v1/operations", fmt.Sprintf(`{"operation_id":%q,"contract":"quota-page","job_id":%q}`, job, job), 201)
	}
	waitFor(t, "an operation waiting on the quota", func() bool {
		m := call(t, base, "alice-token", "GET", "/v1/quotas", "", 200)
		return strings.Contains(fmt.Sprint(m["quotas"]), "waiting_operations:[map[")
	})

	alice := tab(t, browserCtx)
	signIn(t, alice, base, "alice-token")
	click(t, alice, "the header's Quotas link", byRole("link", named("Quotas")))
	act(t, alice, "the quotas page",
		chromedp.WaitVisible("", byRole("heading", named("Shared quotas"))),
		chromedp.WaitVisible("", byRole("listitem", named("Quota env:PROC_TOKEN"))),
		chromedp.WaitVisible("", byRole("table", named("Operations waiting on env:PROC_TOKEN"))),
		chromedp.WaitVisible("", byRole("link", startsWith("qp-"))),
	)
	page := text(t, alice)
	for _, want := range []string{"2 per 10s", "of 2", "provider's remaining", "shared_quota", " operations"} {
		if !strings.Contains(strings.ToLower(page), want) {
			t.Errorf("the quotas page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, canary) {
		t.Errorf("the quotas page shows the secret")
	}
	click(t, alice, "a waiting operation's link", byRole("link", startsWith("qp-")))
	act(t, alice, "its page", chromedp.WaitVisible("", byRole("heading", startsWith("Operation qp-"))))
	if page := strings.ToLower(text(t, alice)); !strings.Contains(page, "priority\n5 (1 most urgent, 9 least") {
		t.Errorf("the operation's page does not show its priority:\n%s", page)
	}

	agent, _, _ := httpSession(t, base, "agent-token")
	if code, body := consoleGet(t, agent, base+"/ui/quotas"); code != http.StatusForbidden || !strings.Contains(body, "approvers") {
		t.Errorf("an agent's /ui/quotas: %d, want 403 saying it is for approvers:\n%s", code, body)
	}
	assertNoCanary(t, dir, p)
}
