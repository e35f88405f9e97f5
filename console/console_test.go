package console

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/tokens"
)

// TestSignIn: the form has the fixed accessible names; a post without its
// CSRF token is 403, an unknown token 401; a good one sets a session
// cookie that is HttpOnly, SameSite=Strict and is not the token.
func TestSignIn(t *testing.T) {
	r := newRig(t)
	b := r.browser()
	form := b.get("/ui/")
	for _, want := range []string{`<label for="token">Token</label>`, `<input id="token" name="token" type="password"`, `<button type="submit">Sign in</button>`} {
		if !strings.Contains(form.body, want) {
			t.Errorf("sign-in form lacks %s", want)
		}
	}
	if p := b.post("/ui/signin", url.Values{"token": {approverToken}}); p.status != http.StatusForbidden {
		t.Errorf("sign-in without CSRF: %d, want 403", p.status)
	}
	p := b.post("/ui/signin", url.Values{"token": {"nobody"}, "csrf": {csrfOf(t, form)}})
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "Unknown token") {
		t.Errorf("unknown token: %d\n%s", p.status, p.body)
	}
	p = b.post("/ui/signin", url.Values{"token": {approverToken}, "csrf": {csrfOf(t, p)}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d\n%s", p.status, p.body)
	}
	var session *http.Cookie
	for _, c := range (&http.Response{Header: p.header}).Cookies() {
		if strings.Contains(c.Value, approverToken) || c.Value == tokens.Hash(approverToken) {
			t.Errorf("cookie %s carries the token", c.Name)
		}
		if c.Name == sessionCookie {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || len(session.Value) < 40 || session.Path != Path {
		t.Fatalf("session cookie %+v", session)
	}
	if h := p.header.Get("Content-Security-Policy"); !strings.Contains(h, "script-src 'self'") {
		t.Errorf("CSP %q", h)
	}
}

// TestAgentReadOnly: an agent sees escalations without a decision form,
// and a decision it posts with its own valid CSRF token is refused and
// changes nothing.
func TestAgentReadOnly(t *testing.T) {
	r := newRig(t)
	r.escalate("exp-1", "running")
	b := r.browser()
	csrf := b.signIn(agentToken)
	p := b.get("/ui/operations/exp-1")
	if p.status != http.StatusOK || !strings.Contains(p.body, "request_budget_exhausted") {
		t.Fatalf("agent's page: %d\n%s", p.status, p.body)
	}
	if strings.Contains(p.body, `name="option"`) || strings.Contains(p.body, `id="note"`) {
		t.Errorf("an agent's page has a decision form:\n%s", p.body)
	}
	before := r.op("exp-1").Version
	p = b.post("/ui/operations/exp-1/decide", url.Values{"option": {"extend"}, "csrf": {csrf}})
	if p.status != http.StatusForbidden || r.op("exp-1").Version != before {
		t.Errorf("agent decision: %d, version %d → %d", p.status, before, r.op("exp-1").Version)
	}
}

// TestApproverDecides: a decision with its note goes through the
// controller, redirects to the page, which shows the new phase and the
// note in the story; a refused one (an option not offered) is shown and
// changes nothing.
func TestApproverDecides(t *testing.T) {
	r := newRig(t)
	r.escalate("exp-2", "running")
	b := r.browser()
	csrf := b.signIn(approverToken)
	p := b.get("/ui/operations/exp-2")
	if !strings.Contains(p.body, `value="extend"`) || !strings.Contains(p.body, `<label for="note">Note</label>`) {
		t.Fatalf("approver's page lacks the form:\n%s", p.body)
	}
	before := r.op("exp-2").Version
	p = b.post("/ui/operations/exp-2/decide", url.Values{"option": {"approve_call"}, "csrf": {csrf}})
	if p.status != http.StatusConflict || !strings.Contains(p.body, "is not offered") || r.op("exp-2").Version != before {
		t.Errorf("an option not offered: %d\n%s", p.status, p.body)
	}
	p = b.post("/ui/operations/exp-2/decide", url.Values{"option": {"extend"}, "note": {"ship <it> tonight"}, "csrf": {csrf}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/operations/exp-2?decided=extend" {
		t.Fatalf("decide: %d %s\n%s", p.status, p.header.Get("Location"), p.body)
	}
	p = b.get(p.header.Get("Location"))
	for _, want := range []string{"The operation is now waiting", "alice (approver) decided extend", "ship &lt;it&gt; tonight"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("after the decision the page lacks %q:\n%s", want, p.body)
		}
	}
	if op := r.op("exp-2"); op.MaxStatusRequests != 5 {
		t.Errorf("budget after extend: %d, want 1+4", op.MaxStatusRequests)
	}
}

// TestProviderStringsShownAsText: markup and control characters from a
// provider reach the page only as visible text.
func TestProviderStringsShownAsText(t *testing.T) {
	r := newRig(t)
	evil := "<img src=x onerror=alert(1)>\x1b[2J\u202e"
	r.escalate("exp-3", evil)
	b := r.browser()
	b.signIn(approverToken)
	for _, path := range []string{"/ui/operations/exp-3", "/ui/?phase="} {
		p := b.get(path)
		if strings.Contains(p.body, "<img") || strings.Contains(p.body, "\x1b") || strings.Contains(p.body, "\u202e") {
			t.Errorf("%s passes the provider's string on raw", path)
		}
		if path != "/ui/?phase=" && !strings.Contains(p.body, `&lt;img src=x onerror=alert(1)&gt;\x1b[2J\x202e`) {
			t.Errorf("%s does not show the provider's string as text:\n%s", path, p.body)
		}
	}
	if strings.Contains(b.get("/ui/operations/exp-3").body, canary) {
		t.Error("the credential reached a page")
	}
}

// TestRevokedTokenEndsSession: a reloaded tokens file without the token
// signs its sessions out at once.
func TestRevokedTokenEndsSession(t *testing.T) {
	r := newRig(t)
	b := r.browser()
	b.signIn(approverToken)
	next, err := tokens.New(tokens.Spec{Name: "build-agent", Role: pollwarden.RoleAgent, SHA256: tokens.Hash(agentToken)})
	if err != nil {
		t.Fatal(err)
	}
	r.tokens.Replace(next)
	if p := b.get("/ui/"); !strings.Contains(p.body, "Sign in") || strings.Contains(p.body, "Sign out") {
		t.Errorf("a revoked token's session still works:\n%s", p.body)
	}
}

// TestQueueFilters: the phase, contract, reason and text filters, and a
// bad phase named.
func TestQueueFilters(t *testing.T) {
	r := newRig(t)
	r.escalate("alpha-1", "running")
	r.escalate("beta-2", "running")
	b := r.browser()
	b.signIn(approverToken)
	others := func(q string) string {
		body := b.get("/ui/?" + q).body
		_, after, _ := strings.Cut(body, `id="others-list"`)
		return after
	}
	if s := others("phase=escalated&q=BETA"); !strings.Contains(s, "beta-2") || strings.Contains(s, "alpha-1") {
		t.Errorf("text filter:\n%s", s)
	}
	if s := others("phase=escalated&reason=rate_limited"); strings.Contains(s, "alpha-1") {
		t.Errorf("reason filter:\n%s", s)
	}
	if s := others("phase=escalated&contract=other"); strings.Contains(s, "alpha-1") {
		t.Errorf("contract filter:\n%s", s)
	}
	if s := others("phase=escalated&contract=export&reason=request_budget_exhausted"); !strings.Contains(s, "alpha-1") {
		t.Errorf("matching filters:\n%s", s)
	}
	if s := others("phase=waiting"); strings.Contains(s, "alpha-1") {
		t.Errorf("phase filter:\n%s", s)
	}
	if p := b.get("/ui/?phase=bogus"); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, `Unknown phase &#34;bogus&#34;`) {
		t.Errorf("bad phase: %d\n%s", p.status, p.body)
	}
}

// TestLiveEvents: an open operation page's stream says "change" when a
// decision is saved.
func TestLiveEvents(t *testing.T) {
	r := newRig(t)
	r.escalate("live-1", "running")
	b := r.browser()
	b.signIn(approverToken)
	resp, err := b.c.Get(b.base + "/ui/operations/live-1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if l := <-lines; l != "retry: 2000" {
		t.Fatalf("first line %q", l)
	}
	ex, _ := r.set.Get("export")
	if _, err := r.ctl.Decide(context.Background(), ex, "live-1", policy.DecisionParams{Option: pollwarden.OptionAbandon,
		Actor: pollwarden.Actor{Name: "bob", Role: pollwarden.RoleApprover}}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended without a change")
			}
			if l == "event: change" {
				return
			}
		case <-timeout:
			t.Fatal("no change event after a decision")
		}
	}
}

// TestAuditForAdmins: an admin sees the chain's head and verifies the
// chain with a CSRF-protected post; an approver gets 403 for both.
func TestAuditForAdmins(t *testing.T) {
	r := newRig(t)
	r.escalate("aud-1", "running")
	pos, hash, err := r.store.AuditHead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	approver := r.browser()
	csrf := approver.signIn(approverToken)
	if p := approver.get("/ui/audit"); p.status != http.StatusForbidden || strings.Contains(p.body, hash) {
		t.Errorf("approver's audit page: %d", p.status)
	}
	if p := approver.post("/ui/audit/verify", url.Values{"csrf": {csrf}}); p.status != http.StatusForbidden {
		t.Errorf("approver's verify: %d", p.status)
	}
	admin := r.browser()
	csrf = admin.signIn(adminToken)
	p := admin.get("/ui/audit")
	if p.status != http.StatusOK || !strings.Contains(p.body, hash) || !strings.Contains(p.body, "Verify the chain") {
		t.Fatalf("admin's audit page: %d\n%s", p.status, p.body)
	}
	if p := admin.post("/ui/audit/verify", url.Values{}); p.status != http.StatusForbidden {
		t.Errorf("verify without CSRF: %d", p.status)
	}
	p = admin.post("/ui/audit/verify", url.Values{"csrf": {csrf}})
	want := fmt.Sprintf("Intact: 1 operations, %d events; head %s at position %d.", pos, hash, pos)
	if p.status != http.StatusOK || !strings.Contains(p.body, want) {
		t.Errorf("verify: %d, want %q\n%s", p.status, want, p.body)
	}
}

// TestSignInReturnsToThePage: opening an operation's link (from a
// notification) without a session signs in and lands on that page; a
// "next" pointing elsewhere lands on the queue.
func TestSignInReturnsToThePage(t *testing.T) {
	r := newRig(t)
	b := r.browser()
	p := b.get("/ui/operations/exp-9")
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, `name="next" value="/ui/operations/exp-9"`) {
		t.Fatalf("operation page without a session: %d\n%s", p.status, p.body)
	}
	csrf := csrfOf(t, p)
	p = b.post("/ui/signin", url.Values{"token": {approverToken}, "csrf": {csrf}, "next": {"/ui/operations/exp-9"}})
	if loc := p.header.Get("Location"); loc != "/ui/operations/exp-9" {
		t.Errorf("after sign-in: Location %q", loc)
	}
	for _, next := range []string{"https://evil.example/", "//evil.example/ui/", "/v1/operations"} {
		b := r.browser()
		csrf := csrfOf(t, b.get("/ui/"))
		p := b.post("/ui/signin", url.Values{"token": {approverToken}, "csrf": {csrf}, "next": {next}})
		if loc := p.header.Get("Location"); loc != "/ui/" {
			t.Errorf("next %q: Location %q, want /ui/", next, loc)
		}
	}
	if p := b.get("/ui/static/"); p.status != http.StatusNotFound {
		t.Errorf("/ui/static/ answers %d; want no listing", p.status)
	}
	if p := b.get("/ui/static/console.css"); p.status != http.StatusOK || !strings.HasPrefix(p.header.Get("Content-Type"), "text/css") {
		t.Errorf("console.css: %d %s", p.status, p.header.Get("Content-Type"))
	}
}

// TestStopWaitingGoesToTheController: an approver sees a stop button on a
// waiting operation (no cancel button: the contract documents no cancel
// call) and the post is the controller's to accept or refuse. Whichever it
// does, the page tells the truth: a refusal changes nothing, an acceptance
// leaves the operation no longer waiting.
func TestStopWaitingGoesToTheController(t *testing.T) {
	r := newRig(t)
	ex, _ := r.set.Get("export")
	r.fp.Script("wait-1", fp.State("running", nil))
	if _, err := r.ctl.Start(context.Background(), ex, policy.NewParams{ID: "wait-1", ProviderJobID: "wait-1", MaxStatusRequests: 3}); err != nil {
		t.Fatal(err)
	}
	b := r.browser()
	csrf := b.signIn(approverToken)
	p := b.get("/ui/operations/wait-1")
	if !strings.Contains(p.body, `value="abandon"`) || strings.Contains(p.body, `value="cancel_at_provider"`) {
		t.Fatalf("waiting operation's page:\n%s", p.body)
	}
	agent := r.browser()
	agent.signIn(agentToken)
	if strings.Contains(agent.get("/ui/operations/wait-1").body, `value="abandon"`) {
		t.Error("an agent sees the stop button")
	}
	before := r.op("wait-1")
	p = b.post("/ui/operations/wait-1/decide", url.Values{"option": {"abandon"}, "note": {"not needed"}, "csrf": {csrf}})
	after := r.op("wait-1")
	switch p.status {
	case http.StatusConflict:
		if after.Version != before.Version || !strings.Contains(p.body, "Refused: ") {
			t.Errorf("a refused stop changed the record (%d → %d) or hid why:\n%s", before.Version, after.Version, p.body)
		}
	case http.StatusSeeOther:
		if after.Phase == pollwarden.PhaseWaiting {
			t.Errorf("an accepted stop left the operation waiting")
		}
	default:
		t.Errorf("stop: %d\n%s", p.status, p.body)
	}
}

// TestAgentSeesOnlyItsOwnOperations: with the tokens' rule, which the use
// cases apply at every door, an agent's console shows only the operations
// its token created; another agent's answers 404 on every page and to a
// decision, and an approver sees both.
func TestAgentSeesOnlyItsOwnOperations(t *testing.T) {
	r := newRig(t)
	r.escalate("mine-1", "running")
	r.escalateOwned("theirs-1", "running", "rival-agent")
	agent := r.browser()
	csrf := agent.signIn(agentToken)
	q := agent.get("/ui/?phase=")
	if strings.Contains(q.body, "theirs-1") || !strings.Contains(q.body, "mine-1") {
		t.Errorf("queue for build-agent:\n%s", q.body)
	}
	if p := agent.post("/ui/operations/theirs-1/decide", url.Values{"option": {"extend"}, "csrf": {csrf}}); p.status != http.StatusNotFound && p.status != http.StatusForbidden {
		t.Errorf("a decision on another agent's operation answered %d", p.status)
	}
	for _, path := range []string{"/ui/operations/theirs-1", "/ui/operations/theirs-1/events"} {
		if p := agent.get(path); p.status != http.StatusNotFound || strings.Contains(p.body, "theirs-1") && p.status == http.StatusOK {
			t.Errorf("%s answered build-agent %d", path, p.status)
		}
	}
	approver := r.browser()
	approver.signIn(approverToken)
	if body := approver.get("/ui/").body; !strings.Contains(body, "theirs-1") || !strings.Contains(body, "mine-1") {
		t.Error("the approver does not see both operations")
	}
}

// TestQueueFiltersBeforeTheLimit: a search finds an operation older than
// a whole page of newer ones that do not match, because the store
// filters before the page's limit (a filter applied to the page would
// show nothing).
func TestQueueFiltersBeforeTheLimit(t *testing.T) {
	r := newRig(t)
	r.escalate("needle-1", "running")
	ex, _ := r.set.Get("export")
	for i := range listLimit + 5 {
		id := fmt.Sprintf("hay-%d", i)
		if _, err := r.ctl.Start(context.Background(), ex, policy.NewParams{ID: id, ProviderJobID: id, Owner: "build-agent"}); err != nil {
			t.Fatal(err)
		}
	}
	b := r.browser()
	b.signIn(approverToken)
	body := b.get("/ui/?phase=&q=NEEDLE").body
	_, others, _ := strings.Cut(body, `id="others-list"`)
	if !strings.Contains(others, "needle-1") || strings.Contains(others, "hay-") {
		t.Errorf("a search behind %d newer operations:\n%s", listLimit+5, others)
	}
	body = b.get("/ui/?phase=&reason=request_budget_exhausted").body
	_, others, _ = strings.Cut(body, `id="others-list"`)
	if !strings.Contains(others, "needle-1") {
		t.Errorf("a reason filter behind %d newer operations:\n%s", listLimit+5, others)
	}
}

// TestNoPollerShown: an operation whose next check is over a minute past
// (operations.NoPoller, the rule `pollwarden ops` marks with "no poller")
// says so on its row and its page; one due just now does not.
func TestNoPollerShown(t *testing.T) {
	r := newRig(t)
	ex, _ := r.set.Get("export")
	op, err := r.ctl.Start(context.Background(), ex, policy.NewParams{ID: "op-left", ProviderJobID: "left", Owner: "build-agent"})
	if err != nil {
		t.Fatal(err)
	}
	ui := New(Options{Ops: operations.New(operations.Options{Controller: r.ctl, Contracts: r.set}), Tokens: r.tokens})
	defer ui.Close()
	if v := ui.view(op, nil, op.NextPollAt.Add(30*time.Second)); v.NoPoller != "" {
		t.Errorf("30 s past its check: %q, want no mark", v.NoPoller)
	}
	v := ui.view(op, nil, op.NextPollAt.Add(3*time.Minute))
	if !strings.Contains(v.NoPoller, "nothing is polling it") {
		t.Fatalf("3 min past its check: %q, want the no-poller mark", v.NoPoller)
	}
	var page strings.Builder
	if err := ui.pages["queue"].ExecuteTemplate(&page, "layout.html", map[string]any{
		"Viewer":    viewer{Actor: pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}, Decide: true},
		"Escalated": []opView{}, "Others": []opView{v}, "Filter": filter{}, "Phases": filterPhases, "Reasons": filterReasons}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `class="no-poller"`) {
		t.Errorf("the queue's row does not show the mark:\n%s", page.String())
	}
}

// TestDecisionFormAnswersOneQuestion: the form carries the open question's
// id; the same form posted again decides nothing and says the question was
// already decided; a finished operation shows who decided what and when,
// not the old question.
func TestDecisionFormAnswersOneQuestion(t *testing.T) {
	r := newRig(t)
	op := r.escalate("exp-3", "running")
	b := r.browser()
	csrf := b.signIn(approverToken)
	p := b.get("/ui/operations/exp-3")
	if !strings.Contains(p.body, `name="escalation" value="`+op.Escalation.ID+`"`) {
		t.Fatalf("the form does not carry escalation %s:\n%s", op.Escalation.ID, p.body)
	}
	form := url.Values{"option": {"abandon"}, "csrf": {csrf}, "escalation": {op.Escalation.ID}}
	if p = b.post("/ui/operations/exp-3/decide", form); p.status != http.StatusSeeOther {
		t.Fatalf("first post: %d\n%s", p.status, p.body)
	}
	before := r.op("exp-3").Version
	p = b.post("/ui/operations/exp-3/decide", form)
	if p.status != http.StatusConflict || !strings.Contains(p.body, "already decided") || r.op("exp-3").Version != before {
		t.Fatalf("the same form again: %d\n%s", p.status, p.body)
	}
	p = b.get("/ui/operations/exp-3")
	if !strings.Contains(p.body, "Decided: abandon by alice (approver) at ") || strings.Contains(p.body, "needs a decision") {
		t.Fatalf("the finished operation does not say who decided:\n%s", p.body)
	}
}
