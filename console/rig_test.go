package console

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/changes"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/tokens"
)

const (
	canary        = "sk-canary-console-81d2"
	agentToken    = "tok-console-agent"
	approverToken = "tok-console-approver"
	adminToken    = "tok-console-admin"
)

// rig is the console over a real SQLite store, the real controller and a
// loopback fake provider, on real HTTP.
type rig struct {
	t       *testing.T
	fp      *fp.Server
	store   *sqlite.Store
	ctl     *controller.Controller
	set     *contract.Set
	tokens  *tokens.Set
	changes *changes.Feed
	srv     *httptest.Server
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, fp: fp.New(), changes: changes.NewFeed()}
	t.Cleanup(r.fp.Close)
	r.fp.RequireToken(canary)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.store = st
	dir := t.TempDir()
	c := `version: 1
name: export
status:
  url: "` + r.fp.URL() + `/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:API_TOKEN"}
  timeout: 2s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: {base: 10ms, max: 20ms}
limits: {deadline: 10m, max_status_requests: 5, max_transport_failures: 3, max_rate_limited: 3}
escalation:
  extension: {time: 15m, status_requests: 4}
`
	if err := os.WriteFile(filepath.Join(dir, "export.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	if r.set, err = contract.LoadDir(dir); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) (string, bool) { return canary, k == "API_TOKEN" }
	r.ctl = controller.New(controller.Options{
		Store: st, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)), Owner: "console-test",
		Prober: prober.New(prober.Options{Now: time.Now, Getenv: getenv}), OnChange: r.changes.Publish,
	})
	r.tokens, err = tokens.New(
		tokens.Spec{Name: "build-agent", Role: pollwarden.RoleAgent, SHA256: tokens.Hash(agentToken)},
		tokens.Spec{Name: "alice", Role: pollwarden.RoleApprover, SHA256: tokens.Hash(approverToken)},
		tokens.Spec{Name: "root", Role: pollwarden.RoleAdmin, SHA256: tokens.Hash(adminToken)},
	)
	if err != nil {
		t.Fatal(err)
	}
	ops := operations.New(operations.Options{Controller: r.ctl, Contracts: r.set, Changes: r.changes, Recheck: 50 * time.Millisecond})
	ui := New(Options{Ops: ops, Tokens: r.tokens, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	r.srv = httptest.NewServer(ui)
	t.Cleanup(r.srv.Close)
	t.Cleanup(ui.Close) // before the server's Close, which waits for streams
	return r
}

// escalate registers job id, created by the agent build-agent, with the
// provider answering state and steps it until it escalates.
func (r *rig) escalate(id, state string) *pollwarden.Operation {
	return r.escalateOwned(id, state, "build-agent")
}

// escalateOwned is escalate for an operation another token created.
func (r *rig) escalateOwned(id, state, owner string) *pollwarden.Operation {
	r.t.Helper()
	r.fp.Script(id, fp.State(state, nil))
	ex, _ := r.set.Get("export")
	ctx := context.Background()
	if _, err := r.ctl.Start(ctx, ex, policy.NewParams{ID: id, ProviderJobID: id, MaxStatusRequests: 1, Owner: owner}); err != nil {
		r.t.Fatal(err)
	}
	for range 50 {
		res, err := r.ctl.Step(ctx, ex, id)
		if err != nil {
			r.t.Fatal(err)
		}
		if res.Op.Phase == pollwarden.PhaseEscalated {
			return res.Op
		}
		time.Sleep(time.Until(res.Until))
	}
	r.t.Fatalf("%s never escalated", id)
	return nil
}

func (r *rig) op(id string) *pollwarden.Operation {
	r.t.Helper()
	op, err := r.store.OperationGet(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return op
}

// browser is an HTTP client with its own cookies that does not follow
// redirects, so each answer is seen as sent.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (r *rig) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: r.t, base: r.srv.URL, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// page is one answer: status, headers, body.
type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) get(path string) page {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(b.t, resp)
}

func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	resp, err := b.c.PostForm(b.base+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(b.t, resp)
}

func read(t *testing.T, resp *http.Response) page {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF field on the page (%d):\n%s", p.status, p.body)
	}
	return m[1]
}

// signIn signs b in with token and returns the session's CSRF token.
func (b *browser) signIn(token string) string {
	b.t.Helper()
	form := b.get("/ui/")
	if p := b.post("/ui/signin", url.Values{"token": {token}, "csrf": {csrfOf(b.t, form)}}); p.status != http.StatusSeeOther {
		b.t.Fatalf("sign in: %d\n%s", p.status, p.body)
	}
	home := b.get("/ui/")
	if !strings.Contains(home.body, "Sign out") {
		b.t.Fatalf("not signed in:\n%s", home.body)
	}
	return csrfOf(b.t, home)
}
