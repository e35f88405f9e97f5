package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// tokenGate is an OAuth2 token endpoint that holds every token request
// open until it is opened, and counts them: a submission whose
// credential is minted at send time waits there, after its record and
// before a byte of it has left for the provider.
type tokenGate struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits int
	open chan struct{}
}

func newTokenGate(t *testing.T) *tokenGate {
	g := &tokenGate{open: make(chan struct{})}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.hits++
		open := g.open
		g.mu.Unlock()
		select {
		case <-open:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, canary)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *tokenGate) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.hits
}

// TestSubmitKilledBeforeSend: the process is SIGKILLed while minting the
// submission's credential, after the attempt is recorded and before the
// submission leaves. The provider has no job. Without a declared key the
// rerun cannot know that and never sends: it escalates with the question
// (and the provider still has no job). With a key the rerun sends it,
// once, with the stored key.
func TestSubmitKilledBeforeSend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, extra string
		code, jobs  int
	}{
		{"without key", "", 26, 0},
		{"with key", "  idempotency_key_header: Idempotency-Key\n", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newSubmitProvider(t)
			gate := newTokenGate(t)
			dir := t.TempDir()
			path := submitContract(t, dir, p.srv.URL, tc.extra)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			minted := strings.Replace(string(b),
				`  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}`,
				`  credential: {kind: oauth2_client_credentials, token_url: "`+gate.srv.URL+`/token", client_id: "env:PROC_TOKEN", client_secret: "env:PROC_TOKEN"}`, 1)
			if minted == string(b) {
				t.Fatal("the credential line was not replaced")
			}
			if err := os.WriteFile(path, []byte(minted), 0o600); err != nil {
				t.Fatal(err)
			}
			args := submitArgs(t, dir, path)
			first := start(t, args...)
			waitFor(t, "the submission to wait for its token", func() bool { return gate.count() == 1 })
			if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = first.cmd.Wait()
			if _, posts, _ := p.counts(); len(posts) != 0 {
				t.Fatalf("%d submissions reached the provider before the kill", len(posts))
			}
			close(gate.open)
			second := start(t, args...)
			if code := second.exitCode(t); code != tc.code {
				t.Fatalf("rerun exit %d, want %d; stdout %s stderr %s", code, tc.code, second.stdout.String(), second.stderr.String())
			}
			jobs, posts, _ := p.counts()
			if jobs != tc.jobs || len(posts) != tc.jobs {
				t.Fatalf("provider created %d jobs from %d submissions; want %d", jobs, len(posts), tc.jobs)
			}
			if tc.code == 26 && !strings.Contains(fmt.Sprint(outcome(t, second)), "may or may not have the job") {
				t.Fatalf("outcome %v", outcome(t, second))
			}
			for _, k := range posts {
				if k == "" {
					t.Fatalf("a re-send carried no key: %q", posts)
				}
			}
			assertNoCanary(t, dir, first, second)
		})
	}
}
