package doortest

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"

	"github.com/pollwarden/pollwarden/console"
)

// TestConsoleDoor and TestConsoleDoorUseCases replay the tables through
// the approver's console over loopback, signed in as a browser is: an
// agent's token reads and lists, an approver's decides and cancels. The
// console offers no create, extension, wait or result fetch, and stopping
// an operation there is an approver's decision, not an agent's abandon.
func TestConsoleDoor(t *testing.T)         { runTable(t, consoleDoor{}) }
func TestConsoleDoorUseCases(t *testing.T) { runRows(t, consoleDoor{}, useCaseTable) }

type consoleDoor struct{}

func (consoleDoor) fine() bool { return true }

func (consoleDoor) do(t *testing.T, r *rig, req request) answer {
	t.Helper()
	token := map[string]string{"": agentToken, otherAgent: otherAgentToken, stranger: strangerToken}[req.as]
	path := "/ui/operations/" + url.PathEscape(req.target)
	switch {
	case req.kind == readOp, req.kind == readEvents: // the page shows the record and its story
		return uiAnswer(uiSignIn(t, r, token).get(t, path), req.target)
	case req.kind == listOps && req.limit == "":
		return uiAnswer(uiSignIn(t, r, token).get(t, "/ui/?"+url.Values{"phase": {req.phase}}.Encode()), "")
	case req.kind == decide && req.as == "", req.kind == cancelOp && req.as == "":
		option := req.option
		if req.kind == cancelOp {
			option = "cancel_at_provider"
		}
		b := uiSignIn(t, r, approverToken)
		return uiAnswer(b.post(t, path+"/decide", url.Values{"option": {option}, "csrf": {b.csrf}, "escalation": {req.escalation}}), req.target)
	}
	return answer{class: notOffered}
}

// uiAnswer classifies a console answer: a page (200) or a decision's
// redirect (303) is accepted, naming id; a refusal's status is its kind.
func uiAnswer(p uiPage, id string) answer {
	if p.status == http.StatusSeeOther {
		return answer{class: accepted, id: id, text: p.body}
	}
	a := classify(p.status, []byte(p.body))
	if a.class == accepted {
		a.id = id
	}
	return a
}

// uiBrowser is a signed-in browser: its cookies and its session's CSRF
// token, following no redirect, so each answer is seen as sent.
type uiBrowser struct {
	base string
	c    *http.Client
	csrf string
}

type uiPage struct {
	status int
	body   string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// uiSignIn serves the console over r once and signs a new browser in
// with token.
func uiSignIn(t *testing.T, r *rig, token string) *uiBrowser {
	t.Helper()
	if r.uiURL == "" {
		ui := console.New(console.Options{Ops: r.ops(), Tokens: doorTokens(t),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		srv := httptest.NewServer(ui)
		t.Cleanup(srv.Close)
		t.Cleanup(ui.Close)
		r.uiURL = srv.URL
	}
	jar, _ := cookiejar.New(nil)
	b := &uiBrowser{base: r.uiURL, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	b.csrf = b.csrfOf(t, b.get(t, "/ui/"))
	if p := b.post(t, "/ui/signin", url.Values{"token": {token}, "csrf": {b.csrf}}); p.status != http.StatusSeeOther {
		t.Fatalf("console sign-in: %d\n%s", p.status, p.body)
	}
	b.csrf = b.csrfOf(t, b.get(t, "/ui/"))
	return b
}

func (b *uiBrowser) csrfOf(t *testing.T, p uiPage) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF field on the console's page (%d):\n%s", p.status, p.body)
	}
	return m[1]
}

func (b *uiBrowser) get(t *testing.T, path string) uiPage {
	t.Helper()
	res, err := b.c.Get(b.base + path)
	if err != nil {
		t.Fatal(err)
	}
	return readPage(t, res)
}

func (b *uiBrowser) post(t *testing.T, path string, form url.Values) uiPage {
	t.Helper()
	res, err := b.c.PostForm(b.base+path, form)
	if err != nil {
		t.Fatal(err)
	}
	return readPage(t, res)
}

func readPage(t *testing.T, res *http.Response) uiPage {
	t.Helper()
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return uiPage{status: res.StatusCode, body: string(body)}
}
