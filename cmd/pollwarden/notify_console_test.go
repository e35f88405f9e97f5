package main

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"mime/quotedprintable"
	"net/http/httptest"
	"net/http/httputil"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/internal/mailsink"
)

var consoleLink = regexp.MustCompile(`https?://[^\s"<>]+/ui/operations/[A-Za-z0-9._~-]+`)

// TestNotificationToDecisionInChromium: the whole path of an escalation
// without a terminal. A real serve, published behind a proxy whose URL is
// the webhooks file's console_url (so a link naming the daemon's own
// listen address would be caught), escalates an operation; the Slack
// message and the e-mail each link to the operation's console page at
// the public URL; the approver follows the e-mail's link in Chromium,
// signs in, lands on that page, extends with a note, and sees the new
// phase and the note in the story.
func TestNotificationToDecisionInChromium(t *testing.T) {
	t.Parallel()
	browserCtx := browser(t)
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("nightly-42", fp.State("running", nil))

	slack := newRecorder(t, "")
	sink := mailsink.Start(t, mailsink.Options{})
	// The daemon's public face: a reverse proxy, started first so its URL
	// can be configured, pointed at serve once serve listens.
	var daemon atomic.Pointer[url.URL]
	public := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(daemon.Load())
		r.Out.Host = r.In.Host
	}, ErrorLog: log.New(io.Discard, "", 0)}) // live-update streams end mid-copy at shutdown
	defer public.Close()

	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	consoleContract(t, cdir, srv.URL())
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n",
		sum("agent-token"), sum("alice-token"))
	hooks := fmt.Sprintf(`console_url: %s
webhooks:
  - {name: chat, format: slack, url: env:PW_SLACK_URL}
  - name: mail
    format: email
    smtp: {addr: %s, from: pollwarden@example.com, to: [oncall@example.com]}
retry: {base: 100ms, max: 300ms, attempts: 20}
timeout: 2s
`, public.URL, sink.Addr)
	const slackToken = "slack-canary-Hk3Vq9-token"
	for name, body := range map[string]string{"tokens.yaml": tokens, "webhooks.yaml": hooks} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := startEnv(t, []string{"PW_SLACK_URL=" + slack.URL + "/services/T0/B0/" + slackToken}, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"), "--contracts", cdir,
		"--tokens", filepath.Join(dir, "tokens.yaml"), "--webhooks", filepath.Join(dir, "webhooks.yaml"))
	defer p.cmd.Process.Kill()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's output:\n%s%s", p.stdout.String(), p.stderr.String())
		}
	})
	base := listenAddr(t, p)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	daemon.Store(u)
	call(t, base, "agent-token", "POST", "/v1/operations",
		`{"operation_id":"nightly-42","contract":"nightly-export","job_id":"nightly-42","max_status_requests":1}`, 201)
	waitPhase(t, base, "nightly-42", "escalated")

	waitFor(t, "the decision request on Slack and by e-mail", func() bool {
		return len(slack.Bodies()) > 0 && len(sink.Mail()) > 0
	})
	want := public.URL + "/ui/operations/nightly-42"
	slackLinks := consoleLink.FindAllString(string(slack.Bodies()[0]), -1)
	mailLinks := consoleLink.FindAllString(mailBody(t, sink.Mail()[0].Data), -1)
	for what, links := range map[string][]string{"the Slack message": slackLinks, "the e-mail": mailLinks} {
		if len(links) == 0 {
			t.Fatalf("%s has no console link", what)
		}
		for _, l := range links {
			if l != want {
				t.Errorf("%s links %s, want the public %s", what, l, want)
			}
		}
	}

	alice := tab(t, browserCtx)
	act(t, alice, "follow the e-mail's link", chromedp.Navigate(mailLinks[0]),
		chromedp.SendKeys("", "alice-token", byRole("textbox", named("Token")), chromedp.NodeVisible),
		chromedp.Click("", byRole("button", named("Sign in")), chromedp.NodeVisible),
		chromedp.WaitVisible("", byRole("heading", named("Operation nightly-42"))))
	if at, err := chromedp.Run(alice, chromedp.Evaluate[string]("location.href")); err != nil || at != want {
		t.Errorf("after signing in the browser is at %q (%v), want %s", at, err, want)
	}
	labels := optionLabels(t, base, "nightly-42")
	const note = "the nightly export is late after the migration; one more window"
	act(t, alice, "write a note", chromedp.SendKeys("", note, byRole("textbox", named("Note")), chromedp.NodeVisible))
	click(t, alice, "extend", byRole("button", startsWith(labels["extend"])))
	// The notice names the phase when the page was drawn: waiting, or
	// escalated again if the extension's four requests were already spent
	// (backoff 0.5–1 s; a loaded machine can draw the page that late). Any
	// other phase, or no notice, is a wrong answer to the decision.
	waitText(t, alice, "Decision recorded: extend. The operation is now ")
	if page := text(t, alice); !strings.Contains(page, "The operation is now waiting.") && !strings.Contains(page, "The operation is now escalated.") {
		t.Errorf("after the extension the page says:\n%s", page)
	}
	waitText(t, alice, "alice (approver) decided extend")
	waitText(t, alice, `note "`+note+`"`)
	if op := call(t, base, "agent-token", "GET", "/v1/operations/nightly-42", "", 200); op["phase"] != "waiting" && op["phase"] != "escalated" {
		t.Errorf("after the extension the operation is %v", op["phase"])
	}
	all := append([][]byte{[]byte(p.stdout.String() + p.stderr.String())}, slack.Bodies()...)
	for _, m := range sink.Mail() {
		all = append(all, m.Data)
	}
	for _, b := range all {
		for _, s := range []string{canary, "alice-token", slackToken} {
			if bytes.Contains(b, []byte(s)) {
				t.Fatalf("%s reached a message or the log:\n%s", s, b)
			}
		}
	}
}

// mailBody is an e-mail's body, decoded from quoted-printable.
func mailBody(t *testing.T, data []byte) string {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the e-mail does not parse: %v\n%s", err, data)
	}
	var r io.Reader = m.Body
	if strings.EqualFold(m.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		r = quotedprintable.NewReader(m.Body)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
