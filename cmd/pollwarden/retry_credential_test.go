package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// The secrets of TestRetryCredential: two the provider refuses, one it
// accepts. None may reach the store, an output or the story.
const (
	refusedSecret1 = "rc-refused-one-4f1c9a7e2b"
	refusedSecret2 = "rc-refused-two-8d3e6b0c5a"
	goodSecret     = "rc-accepted-7a2d9e4f1b"
)

// refusingProvider accepts only goodSecret; any other credential gets a
// 401 whose body echoes it, as some providers' error pages do. It counts
// every status request it sees.
func refusingProvider(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		auth := r.Header.Get("Authorization")
		if auth != "Bearer "+goodSecret {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = fmt.Fprintf(w, `{"error":"invalid_api_key","message":"key %s was revoked"}`, strings.TrimPrefix(auth, "Bearer "))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"state":"succeeded","result":{"url":"https://results.example.com/r.csv"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func optionIDs(op map[string]any) []string {
	esc, _ := op["escalation"].(map[string]any)
	opts, _ := esc["options"].([]any)
	var ids []string
	for _, o := range opts {
		m, _ := o.(map[string]any)
		id, _ := m["id"].(string)
		ids = append(ids, id)
	}
	return ids
}

func has(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestRetryCredential: a real wait is refused (401); with the credential
// unchanged retry_credential is not offered and a decision naming it is
// refused (exit 2), nothing sent. Once the environment holds another
// secret, ops show offers it; deciding it lets exactly one request out
// (the provider's count), and a second 401 escalates again with a new
// question, where a stale answer is refused. With the right secret the
// job then succeeds. The provider's 401 body is in the story, redacted;
// no secret is anywhere in the store, the outputs or the story.
func TestRetryCredential(t *testing.T) {
	t.Parallel()
	prov, sent := refusingProvider(t)
	dir := t.TempDir()
	cf := filepath.Join(dir, "c.yaml")
	c := fmt.Sprintf(`version: 1
name: rc-test
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:RC_TOKEN"}
  timeout: 2s
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: 100ms, max: 200ms}
limits: {deadline: 2m, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
`, prov.URL)
	if err := os.WriteFile(cf, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "pw.db")
	var procs []*proc
	run := func(secret string, want int, args ...string) *proc {
		t.Helper()
		p := startEnv(t, []string{"RC_TOKEN=" + secret, "USER=alice"}, args...)
		procs = append(procs, p)
		if code := p.exitCode(t); code != want {
			t.Fatalf("%v: exit %d, want %d\n%s\n%s", args, code, want, p.stdout.String(), p.stderr.String())
		}
		return p
	}
	wait := func(secret string, want int) map[string]any {
		t.Helper()
		return outcome(t, run(secret, want, "wait", "--contract", cf, "--job-id", "j-1", "--operation-id", "rc-1", "--store", store, "--json"))
	}
	show := func(secret string) map[string]any {
		t.Helper()
		return outcome(t, run(secret, 0, "ops", "show", "rc-1", "--store", store, "--json"))
	}
	decide := func(secret string, want int, extra ...string) *proc {
		t.Helper()
		return run(secret, want, append([]string{"decide", "rc-1", "retry_credential", "--contract", cf, "--store", store}, extra...)...)
	}

	out := wait(refusedSecret1, 24)
	first := escalationID(t, out)
	if n := sent.Load(); n != 1 {
		t.Fatalf("the provider saw %d requests, want 1", n)
	}
	if ids := optionIDs(out); has(ids, "retry_credential") {
		t.Fatalf("retry_credential offered with the refused credential: %v", ids)
	}
	if ids := optionIDs(show(refusedSecret1)); has(ids, "retry_credential") {
		t.Fatalf("ops show offers retry_credential with the credential unchanged: %v", ids)
	}
	d := decide(refusedSecret1, 2)
	if !strings.Contains(d.stderr.String(), "refused") {
		t.Errorf("the refusal does not say why:\n%s", d.stderr.String())
	}
	if op := show(refusedSecret1); op["phase"] != "escalated" || escalationID(t, op) != first {
		t.Fatalf("a refused retry changed the record: %v", op)
	}

	// The credential changes: the offer follows it, judged at the read.
	if ids := optionIDs(show(refusedSecret2)); !has(ids, "retry_credential") {
		t.Fatalf("ops show does not offer retry_credential with a changed credential: %v", ids)
	}
	decide(refusedSecret2, 0, "--escalation", first)
	if n := sent.Load(); n != 1 {
		t.Fatalf("deciding sent %d requests itself; the next wait sends the one allowed", n-1)
	}
	out = wait(refusedSecret2, 24)
	if n := sent.Load(); n != 2 {
		t.Fatalf("the retry let %d requests out, want exactly 1", n-1)
	}
	second := escalationID(t, out)
	if second == first || out["reason"] != "authorization_denied" {
		t.Fatalf("a second 401 did not escalate again with a new question: %v", out)
	}
	if ids := optionIDs(show(refusedSecret2)); has(ids, "retry_credential") {
		t.Fatalf("retry_credential offered with the credential just refused again: %v", ids)
	}
	// An answer to the first question is stale, whatever the credential.
	d = decide(goodSecret, 2, "--escalation", first)
	if !strings.Contains(d.stderr.String(), "already decided") {
		t.Errorf("a stale answer does not say the question was already decided:\n%s", d.stderr.String())
	}
	decide(goodSecret, 0, "--escalation", second)
	out = wait(goodSecret, 0)
	if n := sent.Load(); n != 3 || out["outcome"] != "succeeded" {
		t.Fatalf("with the accepted secret: %v after %d requests, want succeeded after 3", out["outcome"], n)
	}

	story := run(goodSecret, 0, "audit", "show", "rc-1", "--store", store).stdout.String()
	t.Logf("refusal: %s\nstory:\n%s", d.stderr.String(), story)
	for _, want := range []string{"invalid_api_key", "[REDACTED]", "decided retry_credential"} {
		if !strings.Contains(story, want) {
			t.Errorf("the story lacks %q:\n%s", want, story)
		}
	}
	for _, secret := range []string{refusedSecret1, refusedSecret2, goodSecret} {
		for _, p := range procs {
			if strings.Contains(p.stdout.String()+p.stderr.String(), secret) {
				t.Fatalf("a secret reached the output of %v", p.cmd.Args[1:])
			}
		}
		files, _ := filepath.Glob(filepath.Join(dir, "pw.db*"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), secret) {
				t.Fatalf("a secret reached %s", filepath.Base(f))
			}
		}
	}
}
