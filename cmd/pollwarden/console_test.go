package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "rewrite docs/console-queue.png and docs/console-operation.png from a real run")

// consoleContract is a contract whose escalations offer every kind of
// option (extend, cancel at provider, the provider console, stop), with a
// backoff slow enough that an extended operation is seen waiting (its
// five more requests, as its agent asks, take two seconds or more; the console's checks of it
// take a few hundred milliseconds), and short enough that export-7 meets
// its budget, through a 429 asking for 2 s, in about four.
func consoleContract(t *testing.T, dir, base string) {
	t.Helper()
	c := fmt.Sprintf(`version: 1
name: nightly-export
status:
  url: "%[1]s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 2s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: {base: 500ms, max: 1s}
limits: {deadline: 30m, max_status_requests: 40, max_transport_failures: 3, max_rate_limited: 3}
escalation:
  extension: {time: 15m, status_requests: 4}
  console_url: "https://console.example.com/exports/{job_id}"
cancel: {url: "%[1]s/jobs/{job_id}/cancel", method: POST}
`, base)
	if err := os.WriteFile(filepath.Join(dir, "nightly-export.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
}

// consoleRig is a real serve with escalated and waiting operations:
// export-8 and export-9 escalated, export-7 on its way there
// (withTimeline waits for it).
type consoleRig struct {
	base string
	p    *proc
}

func newConsoleRig(t *testing.T) *consoleRig {
	t.Helper()
	srv := fp.New()
	t.Cleanup(srv.Close)
	srv.RequireToken(canary)
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	consoleContract(t, cdir, srv.URL())
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n  - {name: rival-agent, role: agent, sha256: %q}\n",
		sum("agent-token"), sum("alice-token"), sum("rival-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"),
		"--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"))
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	r := &consoleRig{base: listenAddr(t, p), p: p}
	// export-7 meets a rate limit with Retry-After and a server error on
	// its way, for the request timeline to show.
	srv.Script("export-7", fp.State("running", nil), fp.Code(429, map[string]string{"Retry-After": "2"}), fp.Code(503, nil), fp.State("running", nil))
	for id, budget := range map[string]int{"export-7": 4, "export-8": 1, "export-9": 1, "invoice-batch-3": 40, "invoice-batch-4": 40} {
		if id != "export-7" {
			srv.Script(id, fp.State("running", nil))
		}
		call(t, r.base, "agent-token", "POST", "/v1/operations",
			fmt.Sprintf(`{"operation_id":%q,"contract":"nightly-export","job_id":%q,"max_status_requests":%d}`, id, id, budget), 201)
	}
	// Another agent's operation, which build-agent must not see.
	srv.Script("rival-5", fp.State("running", nil))
	call(t, r.base, "rival-token", "POST", "/v1/operations", `{"operation_id":"rival-5","contract":"nightly-export","job_id":"rival-5"}`, 201)
	for _, id := range []string{"export-8", "export-9"} {
		waitPhase(t, r.base, id, "escalated")
	}
	return r
}

// withTimeline waits until export-7 has met its budget after a 429 and a
// 503, and files its agent's extension request.
func (r *consoleRig) withTimeline(t *testing.T) {
	t.Helper()
	waitPhase(t, r.base, "export-7", "escalated")
	call(t, r.base, "agent-token", "POST", "/v1/operations/export-7/extension-requests",
		`{"extra_time":"30m","extra_status_requests":5,"justification":"the export runs nightly and usually ends by 03:00"}`, 202)
}

// TestConsoleInChromium drives the console in Debian's Chromium against a
// real serve, finding every element by its accessible role and name: an
// approver signs in, finds the escalation first in the queue with its
// reason, budget and the agent's pending request, extends it with a note
// and sees it waiting with the note in the story; an agent sees the same
// operations read-only, and its queue follows a decision live.
func TestConsoleInChromium(t *testing.T) {
	t.Parallel()
	browserCtx := browser(t)
	r := newConsoleRig(t)
	r.withTimeline(t)
	alice := tab(t, browserCtx)

	signIn(t, alice, r.base, "alice-token")
	escalatedLink := byRole("link", containsAll("export-7", "request_budget_exhausted", "4 of 4 requests"))
	act(t, alice, "the queue lists export-7 as escalated", chromedp.WaitVisible("", escalatedLink))
	inRow, err := chromedp.Run(alice, chromedp.Evaluate[bool](`!!document.querySelector('a[href="/ui/operations/export-7"]').closest("li, tr")`))
	if err != nil || !inRow {
		t.Fatalf("the escalation's link is not in a list item or table row (%v)", err)
	}
	page := text(t, alice)
	if !strings.Contains(page, "the export runs nightly and usually ends by 03:00") {
		t.Errorf("the queue does not show the agent's pending extension request:\n%s", page)
	}
	if e, w := strings.Index(page, "export-7"), strings.Index(page, "invoice-batch-3"); e < 0 || w < 0 || e > w {
		t.Errorf("escalations are not listed before waiting operations (export-7 at %d, invoice-batch-3 at %d)", e, w)
	}
	// The card says what an approver needs for unknown_state: the
	// provider's job id and the last state it reported.
	card, err := chromedp.Run(alice, chromedp.Evaluate[string](`document.querySelector('a[href="/ui/operations/export-7"]').closest("li").textContent`))
	if err != nil || !strings.Contains(card, "Provider job") || !strings.Contains(card, "Last state") || !strings.Contains(card, "running") ||
		strings.Count(card, "export-7") < 2 {
		t.Errorf("export-7's queue card lacks its job id or last state (%v):\n%s", err, card)
	}
	// A fresh approver's default filter shows the operations, not "No
	// operation matches".
	if others, err := chromedp.Run(alice, chromedp.Evaluate[string](`document.getElementById("others-list").textContent`)); err != nil ||
		strings.Contains(others, "No operation matches") || !strings.Contains(others, "invoice-batch-3") || !strings.Contains(others, "export-8") {
		t.Errorf("the default filter's list (%v):\n%s", err, others)
	}
	checkBrowserCookies(t, alice, r.base)
	screenshot(t, alice, "../../docs/console-queue.png")

	click(t, alice, "open export-7", escalatedLink)
	act(t, alice, "export-7's page", chromedp.WaitVisible("", byRole("heading", named("Operation export-7"))))
	page = text(t, alice)
	for _, want := range []string{"escalated", "request_budget_exhausted", "4 of 4 requests", "Deadline", "Last HTTP result", "200 at ", "Story"} {
		if !strings.Contains(strings.ToLower(page), strings.ToLower(want)) {
			t.Errorf("the operation page lacks %q:\n%s", want, page)
		}
	}
	checkTimeline(t, alice, r.base, "export-7")
	labels := optionLabels(t, r.base, "export-7")
	for _, l := range labels {
		act(t, alice, "a button for option "+l, chromedp.WaitVisible("", byRole("button", startsWith(l))))
	}
	checkAboveFold(t, alice)
	// The agent asked for 30m and 5 more requests: the extend button
	// offers that, not the contract's fixed 15m and 4.
	if !strings.HasPrefix(labels["extend"], "Extend waiting once by 30 minutes with 5 more status requests") ||
		!strings.Contains(labels["extend"], "build-agent asked for 30m and 5 more status requests") {
		t.Errorf("the extend option is not the agent's request as asked: %q", labels["extend"])
	}
	const note = "export feeds the 06:00 report; one more try"
	act(t, alice, "type a note", chromedp.SendKeys("", note, byRole("textbox", named("Note")), chromedp.NodeVisible))
	screenshot(t, alice, "../../docs/console-operation.png")
	click(t, alice, "extend", byRole("button", startsWith(labels["extend"])))
	waitText(t, alice, "Decision recorded: extend. The operation is now waiting.")
	waitText(t, alice, "alice (approver) decided extend")
	waitText(t, alice, `note "`+note+`"`)
	op := call(t, r.base, "agent-token", "GET", "/v1/operations/export-7", "", 200)
	if op["max_status_requests"] != float64(9) {
		t.Errorf("after the extension: %v, want a budget of 9 (4 and the 5 asked for)", op)
	}
	// Its five more requests run out and it escalates again: the live
	// update replaces the banner, which no longer says "now waiting".
	waitPhase(t, r.base, "export-7", "escalated")
	waitText(t, alice, "Decision recorded: extend. The operation has since escalated again and needs a new decision.")
	if page := text(t, alice); strings.Contains(page, "now waiting") {
		t.Errorf("the banner still says the operation is waiting after it escalated again:\n%s", page)
	}

	// An agent: the same escalated operation, with no way to decide.
	act(t, alice, "approver sees export-8's options",
		chromedp.Navigate(r.base+"/ui/operations/export-8"),
		chromedp.WaitVisible("", byRole("button", startsWith("Stop waiting"))),
		chromedp.WaitVisible("", byRole("textbox", named("Note"))))
	agent := tab(t, browserCtx)
	signIn(t, agent, r.base, "agent-token")
	act(t, agent, "agent opens export-8",
		chromedp.Navigate(r.base+"/ui/operations/export-8"),
		chromedp.WaitVisible("", byRole("heading", named("Operation export-8"))))
	if got := roleNames(t, agent, "button"); !slices.Equal(got, []string{"Sign out"}) {
		t.Errorf("an agent's operation page has buttons %q, want only Sign out", got)
	}
	if got := roleNames(t, agent, "textbox"); len(got) != 0 {
		t.Errorf("an agent's operation page has text fields %q", got)
	}
	// Another agent's operations are not in its queue, whatever the
	// filter, and their page is not found; the approver sees them.
	act(t, agent, "agent's queue of every phase", chromedp.Navigate(r.base+"/ui/?phase="),
		chromedp.WaitVisible("", byRole("link", containsAll("invoice-batch-3"))))
	if page := text(t, agent); strings.Contains(page, "rival-5") {
		t.Errorf("build-agent's queue shows rival-agent's operation:\n%s", page)
	}
	act(t, agent, "agent opens rival-5", chromedp.Navigate(r.base+"/ui/operations/rival-5"))
	waitText(t, agent, "There is no operation rival-5.")
	act(t, alice, "approver's queue of every phase", chromedp.Navigate(r.base+"/ui/?phase="),
		chromedp.WaitVisible("", byRole("link", containsAll("rival-5"))))

	// Another site's page that posts a decision form in alice's signed-in
	// browser: the SameSite=Strict cookie stays home and the form has no
	// CSRF token, so nothing is decided.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%s/ui/operations/export-8/decide">`+
			`<input name="option" value="abandon"><input name="note" value="forged"></form>`+
			`<script>document.forms[0].submit()</script>`, r.base)
	}))
	defer evil.Close()
	act(t, alice, "a forged post from another site", chromedp.Navigate(evil.URL))
	waitFor(t, "the forged post to land", func() bool {
		at, err := chromedp.Run(alice, chromedp.Evaluate[string]("location.href"))
		return err == nil && strings.HasPrefix(at, r.base)
	})
	if op := call(t, r.base, "agent-token", "GET", "/v1/operations/export-8", "", 200); op["phase"] != "escalated" {
		t.Fatalf("a forged cross-site post changed export-8: %v", op["phase"])
	}
	if page := text(t, alice); strings.Contains(page, "Decision recorded") {
		t.Errorf("the forged post was answered as a decision:\n%s", page)
	}
	act(t, alice, "alice back on export-8", chromedp.Navigate(r.base+"/ui/operations/export-8"),
		chromedp.WaitVisible("", byRole("button", startsWith("Stop waiting"))))

	// Live: the agent's queue drops export-8 from the escalations when
	// alice stops it, without a reload.
	act(t, agent, "agent's queue", chromedp.Navigate(r.base+"/ui/"),
		chromedp.WaitVisible("", byRole("link", containsAll("export-8", "request_budget_exhausted"))),
		chromedp.Evaluate[chromedp.Void](`window.sameDocument = "yes"`))
	click(t, alice, "alice stops export-8", byRole("button", startsWith("Stop waiting")))
	waitText(t, alice, "The operation is now failed.")
	waitFor(t, "the agent's queue to drop export-8 from the escalations", func() bool {
		gone, err := chromedp.Run(agent, chromedp.Evaluate[bool](`!document.querySelector('#escalated a[href="/ui/operations/export-8"]')`))
		return err == nil && gone
	})
	same, err := chromedp.Run(agent, chromedp.Evaluate[string](`window.sameDocument || "reloaded"`))
	if err != nil || same != "yes" {
		t.Errorf("the queue was reloaded (%q, %v), not updated in place", same, err)
	}
	// Without JavaScript the decision works the same: a plain form post.
	noJS := tab(t, browserCtx)
	act(t, noJS, "turn JavaScript off", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}))
	signIn(t, noJS, r.base, "alice-token")
	act(t, noJS, "stop export-9 without JavaScript",
		chromedp.Navigate(r.base+"/ui/operations/export-9"),
		chromedp.SendKeys("", "no script needed", byRole("textbox", named("Note")), chromedp.NodeVisible),
		chromedp.Click("", byRole("button", startsWith("Stop waiting")), chromedp.NodeVisible),
		chromedp.WaitReady("", byRole("StaticText", containsAll("Decision recorded", "now failed"))))
	if op := call(t, r.base, "agent-token", "GET", "/v1/operations/export-9", "", 200); op["phase"] != "failed" {
		t.Errorf("export-9 after a stop without JavaScript: %v", op)
	}
	for _, tok := range []string{"alice-token", "agent-token"} {
		if strings.Contains(r.p.stdout.String()+r.p.stderr.String(), tok) {
			t.Errorf("serve's output contains the token %s", tok)
		}
	}
}

// checkTimeline: the operation page's request timeline is a figure named
// by its caption, with one mark per status request the API counts, each
// coloured by its answer, and its table says the wait after the 429
// honoured the Retry-After it asked.
func checkTimeline(t *testing.T, ctx context.Context, base, id string) {
	t.Helper()
	act(t, ctx, "the request timeline", chromedp.WaitVisible("", byRole("figure", startsWith("Request timeline: 4 status requests"))))
	answers, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('figure svg [data-request]')].map(g => g.dataset.answer)`))
	if err != nil {
		t.Fatal(err)
	}
	op := call(t, base, "agent-token", "GET", "/v1/operations/"+id, "", 200)
	if float64(len(answers)) != op["status_requests_used"] {
		t.Errorf("the timeline has %d marks, the operation %v status requests", len(answers), op["status_requests_used"])
	}
	if got := strings.Join(answers, " "); got != "state rate-limited server-error state" {
		t.Errorf("the marks' answers are %q", got)
	}
	row, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelectorAll('figure table tbody tr')[1].textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(row, "HTTP 429") || !strings.Contains(row, "Retry-After, ") || !strings.Contains(row, "(respected)") {
		t.Errorf("the 429's row in the timeline's table: %q", row)
	}
}

// checkAboveFold: at 1280×900 every decision button and the note lie
// within the first 900 pixels of the page, measured by their boxes.
func checkAboveFold(t *testing.T, ctx context.Context) {
	t.Helper()
	bottoms, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`window.scrollTo(0, 0), [...document.querySelectorAll(".decide button, .decide textarea")].map(e => e.getBoundingClientRect().bottom + window.scrollY)`))
	if err != nil || len(bottoms) < 3 {
		t.Fatalf("decision controls: %v (%v)", bottoms, err)
	}
	for _, b := range bottoms {
		if b > 900 {
			t.Errorf("a decision control ends %.0f px down the page, below the fold of 900 (all: %v)", b, bottoms)
		}
	}
}

// optionLabels reads the escalation's options from the API, by id.
func optionLabels(t *testing.T, base, id string) map[string]string {
	t.Helper()
	op := call(t, base, "agent-token", "GET", "/v1/operations/"+id, "", 200)
	esc, _ := op["escalation"].(map[string]any)
	opts, _ := esc["options"].([]any)
	out := map[string]string{}
	for _, o := range opts {
		m := o.(map[string]any)
		out[m["id"].(string)] = m["label"].(string)
	}
	if out["extend"] == "" || len(out) < 3 {
		t.Fatalf("escalation of %s offers %v", id, out)
	}
	return out
}

// checkBrowserCookies: the browser holds the session as an HttpOnly,
// SameSite=Strict cookie that is not the token, and no script can read it.
func checkBrowserCookies(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	cookies, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
		res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/ui/"}})
		return res.Cookies, err
	})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, c := range cookies {
		if strings.Contains(c.Value, "alice-token") || c.Value == sum("alice-token") {
			t.Errorf("cookie %s holds the token", c.Name)
		}
		if c.Name == "pollwarden_session" {
			found = true
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict {
				t.Errorf("session cookie: HttpOnly %v, SameSite %q; want HttpOnly, Strict", c.HTTPOnly, c.SameSite)
			}
		}
	}
	if !found {
		t.Errorf("no session cookie among %d", len(cookies))
	}
	js, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.cookie"))
	if err != nil || js != "" {
		t.Errorf("document.cookie = %q (%v): a script can read the session", js, err)
	}
}

// screenshot writes the page to path under -update-screenshots.
func screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	if !*updateScreenshots {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// httpSession signs in with a plain HTTP client and returns it with the
// session's CSRF token and the sign-in answer's cookies.
func httpSession(t *testing.T, base, token string) (*http.Client, string, []*http.Cookie) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	_, form := consoleGet(t, c, base+"/ui/")
	m := csrfField.FindStringSubmatch(form)
	if m == nil {
		t.Fatalf("no CSRF token in the sign-in form:\n%s", form)
	}
	// Without the form's CSRF token, signing in is refused too.
	if code := postForm(t, c, base+"/ui/signin", url.Values{"token": {token}}); code != http.StatusForbidden {
		t.Fatalf("sign-in without its CSRF token: %d, want 403", code)
	}
	resp, err := c.PostForm(base+"/ui/signin", url.Values{"token": {token}, "csrf": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d, want 303", resp.StatusCode)
	}
	_, page := consoleGet(t, c, base+"/ui/")
	m = csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the signed-in page:\n%s", page)
	}
	return c, m[1], resp.Cookies()
}

func consoleGet(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func postForm(t *testing.T, c *http.Client, u string, v url.Values) int {
	t.Helper()
	resp, err := c.PostForm(u, v)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestConsoleRefusesForgedPosts: a decision posted with the session
// cookie but without the session's CSRF token (what another site's page
// could make a signed-in browser send) is refused with 403 and changes
// nothing; the same post with the token works. The session cookie is
// HttpOnly, SameSite=Strict and holds no token.
func TestConsoleRefusesForgedPosts(t *testing.T) {
	t.Parallel()
	r := newConsoleRig(t)
	c, csrf, cookies := httpSession(t, r.base, "alice-token")
	var session *http.Cookie
	for _, ck := range cookies {
		if ck.Name == "pollwarden_session" {
			session = ck
		}
		if strings.Contains(ck.Value, "alice-token") {
			t.Errorf("cookie %s holds the token", ck.Name)
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Value == "" {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict", session)
	}
	events := func() int {
		req, _ := http.NewRequest("GET", r.base+"/v1/operations/export-9/audit", nil)
		req.Header.Set("Authorization", "Bearer agent-token")
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Count(string(b), `"kind"`)
	}
	before := events()
	decide := r.base + "/ui/operations/export-9/decide"
	for name, form := range map[string]url.Values{
		"no token":    {"option": {"abandon"}, "note": {"forged"}},
		"wrong token": {"option": {"abandon"}, "note": {"forged"}, "csrf": {csrf[:len(csrf)-2] + "xx"}},
		"empty token": {"option": {"abandon"}, "note": {"forged"}, "csrf": {""}},
	} {
		if code := postForm(t, c, decide, form); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}
	op := call(t, r.base, "agent-token", "GET", "/v1/operations/export-9", "", 200)
	if op["phase"] != "escalated" || events() != before {
		t.Fatalf("a forged post changed the operation: %v, %d events (was %d)", op, events(), before)
	}
	if code := postForm(t, c, decide, url.Values{"option": {"abandon"}, "note": {"real"}, "csrf": {csrf}}); code != http.StatusSeeOther {
		t.Fatalf("the same post with its CSRF token: %d, want 303", code)
	}
	if op := call(t, r.base, "agent-token", "GET", "/v1/operations/export-9", "", 200); op["phase"] != "failed" {
		t.Fatalf("after a real stop: %v", op)
	}
}
