package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestServePublicURLHTTPSMakesCookiesSecure: serve behind a TLS proxy
// (--public-url https://…) sees plain http itself; every cookie the
// console sets (sign-in form, session, sign-out) is Secure all the same,
// so a browser never sends them over plain http. The Slack decision
// request links the public address, with no console_url in the webhooks
// file.
func TestServePublicURLHTTPSMakesCookiesSecure(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("nightly-7", fp.State("running", nil))
	slack := newRecorder(t, "")
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	consoleContract(t, cdir, srv.URL())
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n",
		sum("agent-token"), sum("alice-token"))
	hooks := "webhooks:\n  - {name: chat, format: slack, url: env:PW_SLACK_URL}\nretry: {base: 100ms, max: 300ms, attempts: 20}\ntimeout: 2s\n"
	for name, body := range map[string]string{"tokens.yaml": tokens, "webhooks.yaml": hooks} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const public = "https://pollwarden.example.com/"
	p := startEnv(t, []string{"PW_SLACK_URL=" + slack.URL + "/services/T0/B0/x"}, "serve", "--listen", "127.0.0.1:0",
		"--store", filepath.Join(dir, "pw.db"), "--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"),
		"--webhooks", filepath.Join(dir, "webhooks.yaml"), "--public-url", public)
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	base := listenAddr(t, p)

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp := cookieReq(t, client, "GET", base+"/ui/", "", nil)
	signin := secureCookies(t, resp, "the sign-in form")
	m := csrfField.FindStringSubmatch(readBody(t, resp))
	if m == nil {
		t.Fatal("no CSRF token in the sign-in form")
	}
	resp = cookieReq(t, client, "POST", base+"/ui/signin", url.Values{"token": {"alice-token"}, "csrf": {m[1]}}.Encode(), signin)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d, want 303", resp.StatusCode)
	}
	session := secureCookies(t, resp, "signing in")
	resp = cookieReq(t, client, "GET", base+"/ui/", "", session)
	m = csrfField.FindStringSubmatch(readBody(t, resp))
	if m == nil {
		t.Fatal("no CSRF token on the signed-in page")
	}
	resp = cookieReq(t, client, "POST", base+"/ui/signout", url.Values{"csrf": {m[1]}}.Encode(), session)
	secureCookies(t, resp, "signing out")

	call(t, base, "agent-token", "POST", "/v1/operations",
		`{"operation_id":"nightly-7","contract":"nightly-export","job_id":"nightly-7","max_status_requests":1}`, 201)
	waitPhase(t, base, "nightly-7", "escalated")
	waitFor(t, "the decision request on Slack", func() bool { return len(slack.Bodies()) > 0 })
	links := consoleLink.FindAllString(string(slack.Bodies()[0]), -1)
	if len(links) == 0 {
		t.Fatalf("the Slack message has no console link: %s", slack.Bodies()[0])
	}
	for _, l := range links {
		if l != "https://pollwarden.example.com/ui/operations/nightly-7" {
			t.Errorf("the Slack message links %s, want the public address", l)
		}
	}
}

// cookieReq sends one request with the given cookies, as a browser would send
// them to the daemon through its proxy.
func cookieReq(t *testing.T, c *http.Client, method, u, form string, cookies []*http.Cookie) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	if form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, ck := range cookies {
		req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// secureCookies fails unless resp sets at least one cookie and every one
// is Secure; it returns them.
func secureCookies(t *testing.T, resp *http.Response, what string) []*http.Cookie {
	t.Helper()
	cks := resp.Cookies()
	if len(cks) == 0 {
		t.Fatalf("%s set no cookie", what)
	}
	for _, ck := range cks {
		if !ck.Secure || !ck.HttpOnly {
			t.Errorf("%s: cookie %s is not Secure and HttpOnly: %s", what, ck.Name, ck.String())
		}
	}
	return cks
}
