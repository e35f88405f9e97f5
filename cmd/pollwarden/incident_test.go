package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// incidentRig is a real serve whose provider refused the credential of
// ref-1 (401): a credential incident holds held-1, held-2 and held-3.
type incidentRig struct {
	base, id, store string
	srv             *fp.Server
}

var heldOps = []string{"held-1", "held-2", "held-3"}

func newIncidentRig(t *testing.T) *incidentRig {
	t.Helper()
	r := &incidentRig{srv: fp.New()}
	t.Cleanup(r.srv.Close)
	r.srv.RequireToken(canary)
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: nightly-export
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 2s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
backoff: {base: 200ms, max: 400ms}
limits: {deadline: 30m, max_status_requests: 40, max_transport_failures: 3, max_rate_limited: 3}
escalation:
  extension: {time: 15m, status_requests: 4}
`, r.srv.URL())
	if err := os.WriteFile(filepath.Join(cdir, "nightly-export.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: alice, role: approver, sha256: %q}\n",
		sum("agent-token"), sum("alice-token"))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	r.store = filepath.Join(dir, "pw.db")
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", r.store,
		"--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"))
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	r.base = listenAddr(t, p)
	r.srv.Script("ref-1", fp.Code(401, nil))
	call(t, r.base, "agent-token", "POST", "/v1/operations", `{"operation_id":"ref-1","contract":"nightly-export","job_id":"ref-1"}`, 201)
	waitPhase(t, r.base, "ref-1", "escalated")
	for _, id := range heldOps {
		r.srv.Script(id, fp.State("running", nil))
		call(t, r.base, "agent-token", "POST", "/v1/operations", fmt.Sprintf(`{"operation_id":%q,"contract":"nightly-export","job_id":%q}`, id, id), 201)
	}
	waitFor(t, "the incident to hold the three operations", func() bool {
		list, _ := call(t, r.base, "alice-token", "GET", "/v1/incidents?open=true", "", 200)["incidents"].([]any)
		if len(list) != 1 {
			return false
		}
		inc := list[0].(map[string]any)
		r.id, _ = inc["id"].(string)
		return inc["held"] == float64(len(heldOps))
	})
	for _, id := range heldOps {
		if n := r.srv.Count(id); n != 0 {
			t.Fatalf("the provider saw %d requests for %s under the refused credential", n, id)
		}
	}
	return r
}

// TestServeIncidentDecisionAppliesToEveryHeldOperation: on a real serve,
// one approver decision on a credential incident abandons every operation
// it holds and the refused one; the bad requests change nothing.
func TestServeIncidentDecisionAppliesToEveryHeldOperation(t *testing.T) {
	t.Parallel()
	r := newIncidentRig(t)
	path := "/v1/incidents/" + r.id
	call(t, r.base, "agent-token", "GET", "/v1/incidents", "", 403)
	call(t, r.base, "agent-token", "POST", path+"/decisions", `{"option":"abandon"}`, 403)
	call(t, r.base, "alice-token", "GET", "/v1/incidents/inc-0000000000000000", "", 404)
	call(t, r.base, "alice-token", "POST", path+"/decisions", `{"option":"reboot"}`, 400)
	call(t, r.base, "alice-token", "POST", path+"/decisions", `{"option":"retry_credential"}`, 409)
	inc := call(t, r.base, "alice-token", "GET", path, "", 200)
	if inc["kind"] != "credential" || inc["what"] != "HTTP 401" || inc["closed_at"] != nil {
		t.Fatalf("the incident: %v", inc)
	}
	d := call(t, r.base, "alice-token", "POST", path+"/decisions", `{"option":"abandon","note":"the token was revoked"}`, 200)
	if applied, _ := d["applied"].([]any); len(applied) != len(heldOps)+1 {
		t.Fatalf("the decision applied to %v, want the three held operations and ref-1", d["applied"])
	}
	for _, id := range append([]string{"ref-1"}, heldOps...) {
		op := call(t, r.base, "alice-token", "GET", "/v1/operations/"+id, "", 200)
		if op["phase"] == "waiting" || op["phase"] == "escalated" {
			t.Fatalf("%s after the incident's abandon: %v", id, op["phase"])
		}
	}
	call(t, r.base, "alice-token", "POST", path+"/decisions", `{"option":"abandon"}`, 409)
	for _, id := range heldOps {
		if n := r.srv.Count(id); n != 0 {
			t.Fatalf("the provider saw %d requests for %s", n, id)
		}
	}
}

// TestIncidentPageInChromium: the console lists the open incident above
// the queue; its page says what failed, since when, how many operations
// it holds and the last probe, and its abandon form applies to them all.
func TestIncidentPageInChromium(t *testing.T) {
	t.Parallel()
	browserCtx := browser(t)
	r := newIncidentRig(t)
	alice := tab(t, browserCtx)
	signIn(t, alice, r.base, "alice-token")
	link := byRole("link", containsAll(r.id, "credential", "HTTP 401"))
	act(t, alice, "the queue lists the open incident", chromedp.WaitVisible("", link))
	page := text(t, alice)
	if i, q := strings.Index(page, "Open provider incidents"), strings.Index(page, "Waiting for a decision"); i < 0 || q < 0 || i > q {
		t.Errorf("the open incidents are not above the queue (%d, %d):\n%s", i, q, page)
	}
	click(t, alice, "open the incident", link)
	act(t, alice, "the incident's page", chromedp.WaitVisible("", byRole("heading", startsWith("Incident "+r.id))))
	page = text(t, alice)
	for _, want := range []string{"What failed", "HTTP 401", "Since", "Operations held", "Last probe's answer", "none yet", "ref-1"} {
		if !strings.Contains(strings.ToLower(page), strings.ToLower(want)) {
			t.Errorf("the incident's page lacks %q:\n%s", want, page)
		}
	}
	held, err := chromedp.Run(alice, chromedp.Evaluate[string](`document.querySelector("dd.held").textContent`))
	if err != nil || strings.TrimSpace(held) != "3" {
		t.Errorf("operations held %q (%v), want 3", held, err)
	}
	act(t, alice, "type a note", chromedp.SendKeys("", "token revoked", byRole("textbox", named("Note")), chromedp.NodeVisible))
	click(t, alice, "abandon", byRole("button", named("Abandon every operation the incident holds")))
	waitText(t, alice, "Decided: abandon.")
	waitText(t, alice, "abandon by alice, for 4 operation(s)")
	for _, id := range append([]string{"ref-1"}, heldOps...) {
		op := call(t, r.base, "alice-token", "GET", "/v1/operations/"+id, "", 200)
		if op["phase"] == "waiting" || op["phase"] == "escalated" {
			t.Fatalf("%s after the console's abandon: %v", id, op["phase"])
		}
	}
	if got := roleNames(t, alice, "button"); strings.Contains(strings.Join(got, ","), "Abandon every") {
		t.Errorf("a closed incident still offers its options: %q", got)
	}
}
