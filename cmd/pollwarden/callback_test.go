package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// cbCanaryKey is the callback signing key; cbCanary the secret as the
// environment holds it. Neither may reach a file, log or answer.
const cbCanaryKey = "cb-canary-Qw8Rt2Lz7-callback-signing-key"

var cbCanary = "whsec_" + base64.StdEncoding.EncodeToString([]byte(cbCanaryKey))

// cbSign signs like a Standard Webhooks sender, independently of package
// webhook.
func cbSign(key, id string, ts int64, body string) string {
	m := hmac.New(sha256.New, []byte(key))
	fmt.Fprintf(m, "%s.%d.%s", id, ts, body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// cbPost sends one callback and returns its status and body.
func cbPost(t *testing.T, base, path, id string, ts int64, sig, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// auditEvents reads an operation's audit as JSON.
func auditEvents(t *testing.T, base, id string) []struct {
	Kind string
	Data struct{ Delay_Source, Detail string }
} {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/operations/"+id+"/audit", nil)
	req.Header.Set("Authorization", "Bearer agent-token")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct {
		Events []struct {
			Kind string
			Data struct{ Delay_Source, Detail string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	return a.Events
}

func countSource(evs []struct {
	Kind string
	Data struct{ Delay_Source, Detail string }
}, src string) int {
	n := 0
	for _, e := range evs {
		if e.Data.Delay_Source == src {
			n++
		}
	}
	return n
}

// TestServeProviderCallbackWakesOnePoll: an operation whose provider asks
// for its next poll in an hour is woken by a verified callback; the next
// status request follows the callback (the provider's request log and the
// audit say so), and its answer, not the callback's body, decides: a
// callback claiming success while the provider says running costs one
// poll and changes nothing else. A forged signature and a replayed old
// timestamp answer 401 and record and send nothing; a callback for an
// unknown job answers exactly as one for a known job. The signing secret
// reaches no file, log or answer.
func TestServeProviderCallbackWakesOnePoll(t *testing.T) {
	t.Parallel()
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	later := map[string]any{"poll_after": 3600}
	srv.Script("batch_1", fp.State("running", later), fp.State("running", later), fp.Succeeded("https://files.example.com/real.csv"))
	var mu sync.Mutex
	var log []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, s)
	}
	srv.OnRequest(func(job string) { note("poll " + job) })
	c := fmt.Sprintf(`version: 1
name: cb-test
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 1s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
hints: {poll_after_seconds: poll_after}
backoff: {base: 100ms, max: 300ms}
limits: {deadline: 2h, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
callback:
  verify: standard-webhooks
  secret: env:PW_CB_SECRET
  job_id_path: data.id
  event_filter: "type == 'batch.completed'"
`, srv.URL())
	dir, p, base := serveContracts(t, []string{"PW_CB_SECRET=" + cbCanary}, map[string]string{"cb.yaml": c})
	var answers []string
	call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"cb-1","contract":"cb-test","job_id":"batch_1"}`, 201)
	// After the first answer the provider's hint puts the next poll an hour away.
	waitFor(t, "the first poll's answer to be recorded", func() bool {
		return countSource(auditEvents(t, base, "cb-1"), "provider_poll_hint") > 0
	})
	before := len(auditEvents(t, base, "cb-1"))

	const path = "/v1/callbacks/cb-test"
	claim := `{"type":"batch.completed","data":{"id":"batch_1","status":"completed","result":{"url":"https://evil.example.com/forged.csv"}}}`
	now := time.Now().Unix()
	send := func(what, id string, ts int64, sig, body string, want int) string {
		t.Helper()
		note(what)
		code, b := cbPost(t, base, path, id, ts, sig, body)
		if code != want {
			t.Fatalf("%s: %d, want %d: %s", what, code, want, b)
		}
		answers = append(answers, b)
		return b
	}
	send("forged", "msg_1", now, cbSign("not-the-key-at-all-000000", "msg_1", now, claim), claim, 401)
	old := now - 600
	send("replayed", "msg_1", old, cbSign(cbCanaryKey, "msg_1", old, claim), claim, 401)
	tampered := strings.Replace(claim, "batch_1", "batch_2", 1)
	send("tampered", "msg_1", now, cbSign(cbCanaryKey, "msg_1", now, claim), tampered, 401)
	unknown := `{"type":"batch.completed","data":{"id":"batch_999"}}`
	gotUnknown := send("unknown", "msg_2", now, cbSign(cbCanaryKey, "msg_2", now, unknown), unknown, 202)
	other := `{"type":"batch.expired","data":{"id":"batch_1"}}`
	send("filtered", "msg_3", now, cbSign(cbCanaryKey, "msg_3", now, other), other, 202)
	// A body over the bound, sent without a length (so the bound, not the
	// header, refuses it), and a contract that takes no callbacks.
	big := `{"type":"batch.completed","data":{"id":"batch_1"},"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	req, _ := http.NewRequest("POST", base+path, io.MultiReader(strings.NewReader(big)))
	req.Header.Set("webhook-id", "msg_9")
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now, 10))
	req.Header.Set("webhook-signature", cbSign(cbCanaryKey, "msg_9", now, big))
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != 413 {
		t.Errorf("a callback over 1 MiB: %d, want 413", resp.StatusCode)
	}
	if code, b := cbPost(t, base, "/v1/callbacks/nope", "msg_9", now, cbSign(cbCanaryKey, "msg_9", now, claim), claim); code != 404 {
		t.Errorf("a callback for a contract that takes none: %d, want 404: %s", code, b)
	}
	if n := len(auditEvents(t, base, "cb-1")); n != before {
		t.Fatalf("callbacks that were refused, unknown or filtered out changed the audit: %d events, want %d", n, before)
	}
	gotKnown := send("callback", "msg_4", now, cbSign(cbCanaryKey, "msg_4", now, claim), claim, 202)
	if gotKnown != gotUnknown {
		t.Errorf("a callback for a known job answered %q, for an unknown one %q: the answer reveals which jobs exist", gotKnown, gotUnknown)
	}
	waitFor(t, "the woken status request", func() bool { return srv.Count("batch_1") == 2 })
	// The poll said running: the callback's claim of success changed nothing.
	op := call(t, base, "agent-token", "GET", "/v1/operations/cb-1", "", 200)
	if op["phase"] != "waiting" {
		t.Fatalf("after a callback claiming success and a poll saying running: phase %v, want waiting", op["phase"])
	}
	waitFor(t, "the second answer to be recorded", func() bool {
		return countSource(auditEvents(t, base, "cb-1"), "provider_poll_hint") >= 2
	})
	// A second verified callback (a duplicate delivery under a new id) wakes
	// one more poll, whose answer ends the job with the provider's result.
	now = time.Now().Unix()
	send("callback", "msg_5", now, cbSign(cbCanaryKey, "msg_5", now, claim), claim, 202)
	final := waitPhase(t, base, "cb-1", "succeeded")
	if b, _ := json.Marshal(final["result"]); !bytes.Contains(b, []byte("real.csv")) || bytes.Contains(b, []byte("forged")) {
		t.Errorf("result %s: want the provider's, never the callback's", b)
	}

	mu.Lock()
	got := strings.Join(log, ", ")
	mu.Unlock()
	want := "poll batch_1, forged, replayed, tampered, unknown, filtered, callback, poll batch_1, callback, poll batch_1"
	if got != want {
		t.Errorf("order of callbacks and status requests:\n got %s\nwant %s", got, want)
	}
	evs := auditEvents(t, base, "cb-1")
	if n := countSource(evs, "provider_callback"); n != 2 {
		t.Errorf("%d provider_callback events, want 2 (one per verified callback)", n)
	}
	for _, e := range evs {
		if e.Data.Delay_Source == "provider_callback" && !strings.HasPrefix(e.Data.Detail, "callback received, verified; next poll") {
			t.Errorf("callback event detail %q", e.Data.Detail)
		}
	}
	story := callText(t, base, "/v1/operations/cb-1/audit")
	if !strings.Contains(story, "provider callback") {
		t.Errorf("the story does not name the callback:\n%s", story)
	}
	answers = append(answers, story)

	// The signing secret: files (the store, its WAL), logs, answers.
	texts := map[string][]byte{"API answers": []byte(strings.Join(answers, "\n")), "serve output": []byte(p.stdout.String() + p.stderr.String())}
	files, _ := filepath.Glob(filepath.Join(dir, "pw.db*"))
	if len(files) == 0 {
		t.Fatal("no store file to check")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[filepath.Base(f)] = b
	}
	for where, b := range texts {
		for _, s := range []string{cbCanary, cbCanaryKey, strings.TrimPrefix(cbCanary, "whsec_")} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("the callback signing secret reached %s", where)
			}
		}
	}
	assertNoCanary(t, dir, p)
}

// callText GETs path as the agent and returns the body as text.
func callText(t *testing.T, base, path string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer agent-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
