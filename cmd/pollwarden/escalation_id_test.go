package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// escalationID is the id of op's open question.
func escalationID(t *testing.T, op map[string]any) string {
	t.Helper()
	esc, _ := op["escalation"].(map[string]any)
	id, _ := esc["id"].(string)
	if id == "" {
		t.Fatalf("record without an escalation id: %v", op)
	}
	return id
}

// approverServe starts serve with the approve_each_call contract and two
// approvers, alice and bob.
func approverServe(t *testing.T, provURL string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	sensitiveContract(t, cdir, provURL)
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n  - {name: bob, role: approver, sha256: %q}\n",
		sum("agent-token"), sum("alice-token"), sum("bob-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "pw.db"), "--contracts", cdir,
		"--tokens", filepath.Join(dir, "tokens.yaml"))
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return listenAddr(t, p), dir
}

// post sends a decision and returns its status and body.
func postDecision(t *testing.T, base, token, id, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/operations/"+id+"/decisions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeTwoApproversOneQuestionOneCall is the attack of "a decision is
// not tied to the question the approver saw": two approvers answer the
// question "request 1 of 10" at once, naming it. Exactly one decision is
// made and exactly one call reaches the provider; the other approver gets
// 409, and so does a late answer to the same question once the next call
// asks again. Without an id the open question is answered; an abandon
// then closes it, the record says who decided what and when, and a
// decision on it says it was already decided.
func TestServeTwoApproversOneQuestionOneCall(t *testing.T) {
	t.Parallel()
	prov, sent := sensitiveProvider(t)
	base, _ := approverServe(t, prov.URL)
	call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"q-1","contract":"sensitive","job_id":"j-77"}`, 201)
	op := waitPhase(t, base, "q-1", "escalated")
	first := escalationID(t, op)

	body := fmt.Sprintf(`{"option":"approve_call","escalation":%q}`, first)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	texts := make([]string, 2)
	for i, tok := range []string{"alice-token", "bob-token"} {
		wg.Go(func() { codes[i], texts[i] = postDecision(t, base, tok, "q-1", body) })
	}
	wg.Wait()
	ok, conflict := 0, 0
	for i, c := range codes {
		switch c {
		case 200:
			ok++
		case 409:
			conflict++
			if !strings.Contains(texts[i], first) {
				t.Errorf("the refusal does not name the question: %s", texts[i])
			}
		default:
			t.Errorf("decision answered %d: %s", c, texts[i])
		}
	}
	if ok != 1 || conflict != 1 {
		t.Fatalf("two approvers on one question: %d decisions, %d conflicts (%v %v); want 1 and 1", ok, conflict, texts[0], texts[1])
	}
	waitFor(t, "the approved call and the next question", func() bool {
		op = call(t, base, "alice-token", "GET", "/v1/operations/q-1", "", 200)
		return op["phase"] == "escalated" && op["status_requests_used"] == 1.0
	})
	second := escalationID(t, op)
	if second == first {
		t.Fatalf("the next call's question kept the id %s", first)
	}
	// A late answer to the first question approves nothing more.
	if code, text := postDecision(t, base, "bob-token", "q-1", body); code != 409 || !strings.Contains(text, "already decided") {
		t.Fatalf("a late answer to %s: %d %s, want 409 already decided", first, code, text)
	}
	if n := sent.Load(); n != 1 {
		t.Fatalf("the provider saw %d requests after one question was answered twice, want 1", n)
	}
	if op := call(t, base, "alice-token", "GET", "/v1/operations/q-1", "", 200); escalationID(t, op) != second || op["status_requests_used"] != 1.0 {
		t.Fatalf("a refused decision changed the record: %v", op)
	}
	// A malformed id is refused as a conflict too, and changes nothing.
	if code, _ := postDecision(t, base, "alice-token", "q-1", `{"option":"approve_call","escalation":"`+strings.Repeat("x", 100)+`"}`); code != 422 {
		t.Fatalf("an overlong escalation id: %d, want 422", code)
	}

	call(t, base, "alice-token", "POST", "/v1/operations/q-1/decisions", `{"option":"abandon","note":"not needed"}`, 200)
	op = call(t, base, "agent-token", "GET", "/v1/operations/q-1", "", 200)
	esc, _ := op["escalation"].(map[string]any)
	msg, _ := esc["message"].(string)
	if !strings.HasPrefix(msg, "Decided: abandon by alice (approver) at ") || strings.Contains(msg, "needs a decision") {
		t.Fatalf("a finished operation still asks its question: %q", msg)
	}
	if d, _ := esc["decided"].(map[string]any); d["option"] != "abandon" || d["escalation"] != second {
		t.Fatalf("escalation.decided %v, want abandon of %s", d, second)
	}
	code, text := postDecision(t, base, "bob-token", "q-1", `{"option":"extend"}`)
	if code != 409 || !strings.Contains(text, "already decided") || !strings.Contains(text, "abandon by alice") {
		t.Fatalf("a decision on the abandoned operation: %d %s, want 409 naming alice's abandon", code, text)
	}
	if n := sent.Load(); n != 1 {
		t.Fatalf("the provider saw %d requests, want 1", n)
	}
}

var escalationField = regexp.MustCompile(`name="escalation" value="([^"]*)"`)

// TestConsoleFormPostedTwiceDecidesOnce: the console's decision form, as
// served, carries the question's id; posting it twice (a double click, a
// browser's resend) through the real form flow with its CSRF token makes
// one decision and one provider call, and the second post says the
// question was already decided.
func TestConsoleFormPostedTwiceDecidesOnce(t *testing.T) {
	t.Parallel()
	prov, sent := sensitiveProvider(t)
	base, _ := approverServe(t, prov.URL)
	call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"q-2","contract":"sensitive","job_id":"j-77"}`, 201)
	op := waitPhase(t, base, "q-2", "escalated")
	c, csrf, _ := httpSession(t, base, "alice-token")
	_, page := consoleGet(t, c, base+"/ui/operations/q-2")
	m := escalationField.FindStringSubmatch(page)
	if m == nil || m[1] != escalationID(t, op) {
		t.Fatalf("the decision form does not carry the open question's id %s:\n%s", escalationID(t, op), page)
	}
	form := url.Values{"csrf": {csrf}, "escalation": {m[1]}, "option": {"approve_call"}, "note": {"once"}}
	if code := postForm(t, c, base+"/ui/operations/q-2/decide", form); code != http.StatusSeeOther {
		t.Fatalf("first post: %d, want 303", code)
	}
	resp, err := c.PostForm(base+"/ui/operations/q-2/decide", form)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), "already decided") {
		t.Fatalf("second post of the same form: %d, want 409 saying already decided:\n%s", resp.StatusCode, b)
	}
	waitFor(t, "the approved call", func() bool {
		op = call(t, base, "alice-token", "GET", "/v1/operations/q-2", "", 200)
		return op["phase"] == "escalated" && op["status_requests_used"] == 1.0
	})
	if n := sent.Load(); n != 1 {
		t.Fatalf("the provider saw %d requests after one form posted twice, want 1", n)
	}
	story := callText(t, base, "/v1/operations/q-2/audit")
	if strings.Count(story, "decided approve_call") != 1 {
		t.Fatalf("the story does not hold exactly one decision:\n%s", story)
	}
}
