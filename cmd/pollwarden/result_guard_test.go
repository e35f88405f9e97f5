package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoFiles is a provider whose jobs succeed at once and whose result
// files are the attacks: the credential echoed JSON-escaped, echoed raw
// across two reads, and a result far larger than an MCP answer. It counts
// the fetches of each file.
type echoFiles struct {
	mu      sync.Mutex
	fetches map[string]int
}

func (p *echoFiles) count(file string) int { p.mu.Lock(); defer p.mu.Unlock(); return p.fetches[file] }

// escapeAll writes every character as \uXXXX: no byte of the raw secret.
func escapeAll(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

func (p *echoFiles) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"state":"succeeded","output_file_id":%q}`, r.PathValue("id"))
	})
	mux.HandleFunc("GET /files/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		p.mu.Lock()
		p.fetches[id]++
		p.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+canary {
			w.WriteHeader(401)
			return
		}
		switch id {
		case "escaped":
			fmt.Fprintf(w, `{"echo":"%s"}`, escapeAll(canary))
		case "split":
			// The secret less its last byte, flushed, then the rest after a
			// pause: a slow provider splits it over two reads.
			fmt.Fprintf(w, `{"echo":"%s`, canary[:len(canary)-1])
			w.(http.Flusher).Flush()
			select {
			case <-time.After(300 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
			fmt.Fprintf(w, `%s"}`, canary[len(canary)-1:])
		case "huge":
			chunk := strings.Repeat("z", 64<<10)
			for range 128 { // 8 MiB, streamed
				if _, err := fmt.Fprint(w, chunk); err != nil {
					return
				}
			}
		default:
			fmt.Fprint(w, `{"rows":[1,2,3]}`)
		}
	})
	return mux
}

// TestServeResultFetchAttacks performs, against a real serve, the attacks
// on result fetches: the credential echoed JSON-escaped, or raw across
// two reads, reaches neither the API's nor MCP get_result's caller in any
// form; get_result stops a large result at what its answer carries instead
// of downloading it whole; and max_fetches bounds the fetches sent for one
// operation through the API, MCP and the CLI together, refusing one more
// (429, a tool error, exit 2) with nothing sent and the refusal recorded.
func TestServeResultFetchAttacks(t *testing.T) {
	t.Parallel()
	prov := &echoFiles{fetches: map[string]int{}}
	srv := httptest.NewServer(prov.handler())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfile := filepath.Join(cdir, "echo-result.yaml")
	if err := os.WriteFile(cfile, []byte(fmt.Sprintf(`version: 1
name: echo-result
status:
  url: "%[1]s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 2s
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
result:
  require: [{path: output_file_id, kind: string}]
  fetch: {url: "%[1]s/files/{output_file_id}", max_bytes: 16777216}
backoff: {base: 150ms, max: 300ms}
limits: {deadline: 60s, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
`, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n", sum(tokA))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "pw.db")
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", store, "--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"))
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	base := listenAddr(t, p)
	for _, job := range []string{"escaped", "split", "huge", "ok"} {
		call(t, base, tokA, "POST", "/v1/operations", `{"operation_id":"op-`+job+`","contract":"echo-result","job_id":"`+job+`"}`, 201)
	}
	for _, job := range []string{"escaped", "split", "huge", "ok"} {
		waitFor(t, job+" to succeed", func() bool {
			_, body := send(t, base, tokA, "GET", "/v1/operations/op-"+job, "", "")
			return strings.Contains(body, `"phase": "succeeded"`)
		})
	}
	// leaks reports whether s holds the secret in any form an agent could
	// read back: raw, JSON-escaped, or its first bytes.
	leaks := func(s string) bool {
		return strings.Contains(s, canary[:8]) || strings.Contains(strings.ToLower(s), strings.ToLower(escapeAll(canary[:4])))
	}
	// fetchWhole reads a result through the API as a client would: the
	// status, every byte that arrived, even of an aborted answer, and
	// whether the answer ended whole.
	fetchWhole := func(id string) (int, string, bool) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/v1/operations/"+id+"/result", nil)
		req.Header.Set("Authorization", "Bearer "+tokA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error(), false
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				return resp.StatusCode, b.String(), err == io.EOF
			}
		}
	}
	fetch := func(id string) (int, string) {
		t.Helper()
		code, body, _ := fetchWhole(id)
		return code, body
	}

	// What precedes the secret may have gone out; the secret never, and
	// the answer is then an error or aborted, never a whole result.
	for _, id := range []string{"op-split", "op-escaped"} {
		code, body, whole := fetchWhole(id)
		if code == 200 && whole || leaks(body) {
			t.Fatalf("API result of %s: %d (whole %v), the agent got %q", id, code, whole, body)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "result-test", Version: "v0"}, nil)
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{tokA, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = session.Close() })
	getResult := func(id string) (string, bool) {
		t.Helper()
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "get_result", Arguments: map[string]any{"operation_id": id}})
		if err != nil {
			t.Fatalf("get_result %s: %v", id, err)
		}
		raw, _ := json.Marshal(res)
		return string(raw), res.IsError
	}
	for _, id := range []string{"op-escaped", "op-split"} {
		answer, isErr := getResult(id)
		if !isErr || leaks(answer) {
			t.Fatalf("get_result %s: error %v, the agent got %s", id, isErr, answer)
		}
	}

	// A result of 8 MiB: get_result stops at the 256 KiB it can answer.
	answer, isErr := getResult("op-huge")
	if !isErr || !strings.Contains(answer, "larger than") {
		t.Fatalf("get_result of 8 MiB: error %v, %s", isErr, answer)
	}
	var audit struct {
		Events []struct {
			Kind string `json:"kind"`
			Data struct {
				Bytes int64 `json:"bytes"`
			} `json:"data"`
		} `json:"events"`
	}
	_, body := send(t, base, tokA, "GET", "/v1/operations/op-huge/audit", "", "application/json")
	if err := json.Unmarshal([]byte(body), &audit); err != nil {
		t.Fatalf("audit: %v: %s", err, body)
	}
	ended := false
	for _, e := range audit.Events {
		switch e.Kind {
		case "result_fetched":
			t.Fatalf("get_result downloaded the whole result (%d bytes) to keep 256 KiB", e.Data.Bytes)
		case "result_fetch_failed":
			ended = e.Data.Bytes <= 256<<10
		}
	}
	if !ended {
		t.Fatalf("no result_fetch_failed event within 256 KiB: %s", body)
	}

	// max_fetches (3 by default) across the API, MCP and the CLI.
	if code, body := fetch("op-ok"); code != 200 || body != `{"rows":[1,2,3]}` {
		t.Fatalf("first fetch: %d %s", code, body)
	}
	if answer, isErr := getResult("op-ok"); isErr {
		t.Fatalf("second fetch (MCP): %s", answer)
	}
	cli := start(t, "result", "op-ok", "--store", store, "--contract", cfile)
	if code := cli.exitCode(t); code != 0 || cli.stdout.String() != `{"rows":[1,2,3]}` {
		t.Fatalf("third fetch (CLI): exit %d, %s %s", code, cli.stdout.String(), cli.stderr.String())
	}
	if code, body := fetch("op-ok"); code != 429 || !strings.Contains(body, "max_fetches") {
		t.Fatalf("a fourth fetch through the API: %d %s, want 429 naming max_fetches", code, body)
	}
	if answer, isErr := getResult("op-ok"); !isErr || !strings.Contains(answer, "max_fetches") {
		t.Fatalf("a fourth fetch through MCP: %s", answer)
	}
	cli = start(t, "result", "op-ok", "--store", store, "--contract", cfile)
	if code := cli.exitCode(t); code != 2 || !strings.Contains(cli.stderr.String(), "max_fetches") {
		t.Fatalf("a fourth fetch through the CLI: exit %d, %s", code, cli.stderr.String())
	}
	if n := prov.count("ok"); n != 3 {
		t.Fatalf("the provider saw %d fetches of one operation's result, want 3", n)
	}
	if _, story := send(t, base, tokA, "GET", "/v1/operations/op-ok/audit", "", ""); strings.Count(story, "result fetch refused") != 3 {
		t.Fatalf("the refusals are not all recorded:\n%s", story)
	}
	assertNoCanary(t, dir, p)
}
