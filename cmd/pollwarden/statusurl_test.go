package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"
)

// TestServeStatusURLQueryIsNeverShown is the attack on a presigned status
// URL (?sig=…&se=…, a SAS, Azure Durable Functions' code=): a provider's
// Operation-Location carries one, which the agent never saw, and it
// appeared whole in the create answer and every read, the story, every
// signed webhook and the audit chain. Only the prober needs it: everyone
// reads it cut ("?…"). An agent that gave a status URL itself reads it
// back whole; nobody else does.
func TestServeStatusURLQueryIsNeverShown(t *testing.T) {
	t.Parallel()
	const sig, code = "sig=presigned-canary-4b1e", "code=agent-system-key-77c2"
	var polls atomic.Int32
	var mu sync.Mutex
	var refused []string
	var prov *httptest.Server
	prov = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/jobs":
			w.Header().Set("Operation-Location", prov.URL+"/jobs/run-9?"+sig+"&se=2099-01-01")
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"id":"run-9","status":"queued"}`)
		case r.URL.RawQuery != sig+"&se=2099-01-01" && r.URL.RawQuery != code:
			// The capability is the query: without it, no answer.
			mu.Lock()
			refused = append(refused, r.URL.String())
			mu.Unlock()
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"error":"signature required"}`)
		case polls.Add(1) < 3:
			fmt.Fprint(w, `{"state":"running"}`)
		default:
			fmt.Fprint(w, `{"state":"succeeded","result":{"url":"https://files.example.com/r.csv"}}`)
		}
	}))
	defer prov.Close()
	dir := t.TempDir()
	cfile := submitContract(t, dir, prov.URL, "")
	b, err := os.ReadFile(cfile)
	if err != nil {
		t.Fatal(err)
	}
	_, cdir, tokens := servedDir(t, string(b))
	cdirParent := filepath.Dir(cdir)
	store := filepath.Join(cdirParent, "pw.db")
	var hookMu sync.Mutex
	var hookBodies [][]byte
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hookMu.Lock()
		hookBodies = append(hookBodies, b)
		hookMu.Unlock()
	}))
	defer recv.Close()
	hooks := filepath.Join(cdirParent, "webhooks.yaml")
	if err := os.WriteFile(hooks, []byte("webhooks:\n  - name: ops\n    url: "+recv.URL+"/hook\n    secret: env:PW_WEBHOOK_SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startEnv(t, []string{"PW_WEBHOOK_SECRET=" + whCanary}, "serve", "--listen", "127.0.0.1:0", "--store", store,
		"--contracts", cdir, "--tokens", tokens, "--webhooks", hooks)
	defer p.cmd.Process.Kill()
	base := listenAddr(t, p)

	var shown [][]byte
	keep := func(m map[string]any) map[string]any {
		b, _ := json.Marshal(m)
		shown = append(shown, b)
		return m
	}
	keep(call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"presigned","contract":"sub-test","submit":{"body":{"report":"q3"}}}`, 201))
	op := keep(waitPhase(t, base, "presigned", "succeeded"))
	if want := prov.URL + "/jobs/run-9?…"; op["status_url"] != want {
		t.Errorf("the submitter reads status_url %v, want %s", op["status_url"], want)
	}
	keep(call(t, base, "alice-token", "GET", "/v1/operations/presigned", "", 200))
	shown = append(shown, get(t, base, "agent-token", "/v1/operations", ""),
		get(t, base, "alice-token", "/v1/operations", ""),
		get(t, base, "agent-token", "/v1/operations/presigned/audit", "application/json"),
		get(t, base, "agent-token", "/v1/operations/presigned/audit", "text/plain"))

	// The agent's own capability URL: whole for that agent only.
	own := prov.URL + "/jobs/run-10?" + code
	created := call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"own","contract":"sub-test","status_url":"`+own+`"}`, 201)
	if created["status_url"] != own {
		t.Errorf("the agent that gave the status URL reads %v, want it whole", created["status_url"])
	}
	waitPhase(t, base, "own", "succeeded")
	if got := call(t, base, "agent-token", "GET", "/v1/operations/own", "", 200)["status_url"]; got != own {
		t.Errorf("the agent reads back %v, want its own URL whole", got)
	}
	keep(call(t, base, "alice-token", "GET", "/v1/operations/own", "", 200))
	shown = append(shown, get(t, base, "alice-token", "/v1/operations", ""),
		get(t, base, "alice-token", "/v1/operations/own/audit", "text/plain"))

	// The same reads over MCP: the agent's own URL whole, the submitted
	// one cut.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := sdk.NewClient(&sdk.Implementation{Name: "status-url-test", Version: "v0"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{"agent-token", http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("mcp connect: %v", err)
	}
	for id, want := range map[string]string{"presigned": prov.URL + "/jobs/run-9?…", "own": own} {
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "get_job", Arguments: map[string]any{"operation_id": id}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var got struct {
			StatusURL string `json:"status_url"`
		}
		_ = json.Unmarshal(b, &got)
		if got.StatusURL != want {
			t.Errorf("MCP get_job %s: status_url %q, want %q", id, got.StatusURL, want)
		}
		if id == "presigned" {
			shown = append(shown, b)
		}
	}
	session.Close()

	waitFor(t, "the webhooks of both outcomes", func() bool {
		hookMu.Lock()
		defer hookMu.Unlock()
		return len(hookBodies) >= 2
	})
	hookMu.Lock()
	shown = append(shown, hookBodies...)
	hookMu.Unlock()
	shown = append(shown, []byte(runCLI(t, nil, "audit", "export", "--store", store)))
	for i, s := range shown {
		for _, leak := range []string{sig, code, "presigned-canary", "agent-system-key"} {
			if bytes.Contains(s, []byte(leak)) {
				t.Errorf("answer %d shows %q: %.300s", i, leak, s)
			}
		}
	}
	if !bytes.Contains(bytes.Join(shown, nil), []byte("/jobs/run-9?…")) {
		t.Error("the cut status URL is shown nowhere: the story should still say where the job is")
	}
	mu.Lock()
	if len(refused) > 0 {
		t.Errorf("the prober polled without the whole URL: %v", refused)
	}
	mu.Unlock()

	// The store keeps the whole URL only where the prober reads it (the
	// record): no event payload and no outbox row holds it.
	db, err := sql.Open("sqlite", "file:"+store+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`SELECT count(*) FROM events WHERE instr(CAST(payload AS TEXT), 'presigned-canary') > 0 OR instr(CAST(payload AS TEXT), 'agent-system-key') > 0`} {
		var n int
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d stored events hold the status URL's query", n)
		}
	}
	var whole int
	if err := db.QueryRow(`SELECT count(*) FROM operations WHERE instr(status_url, 'presigned-canary') > 0`).Scan(&whole); err != nil {
		t.Fatal(err)
	}
	if whole != 1 {
		t.Errorf("the record keeps the whole status URL %d times, want once (the prober needs it after a restart)", whole)
	}
}
