package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// resultFiles is a provider whose job "done-*" succeeds with an output
// file and whose job "slow" stays running; it serves the files' content
// only to the contract's credential and counts every fetch.
type resultFiles struct {
	mu      sync.Mutex
	fetches int
	files   map[string]string
	// release holds the second half of a "chunked" file until the test
	// has seen the first half reach its client.
	release chan struct{}
}

func (p *resultFiles) count() int { p.mu.Lock(); defer p.mu.Unlock(); return p.fetches }

func (p *resultFiles) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+canary {
			w.WriteHeader(401)
			return
		}
		id := r.PathValue("id")
		if id == "slow" {
			fmt.Fprint(w, `{"state":"running"}`)
			return
		}
		fmt.Fprintf(w, `{"state":"succeeded","output_file_id":"file-%s"}`, id)
	})
	mux.HandleFunc("GET /files/{id}/content", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.fetches++
		body, ok := p.files[r.PathValue("id")]
		p.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+canary || !ok {
			w.WriteHeader(404)
			return
		}
		if !strings.Contains(r.PathValue("id"), "chunked") {
			io.WriteString(w, body)
			return
		}
		// Flushed in two halves (no Content-Length), the second once the
		// first has reached the test's client through pollwarden.
		half := len(body) / 2
		io.WriteString(w, body[:half])
		w.(http.Flusher).Flush()
		select {
		case <-p.release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, body[half:])
	})
	return mux
}

// TestServeAndCLIFetchResult drives a real serve, and the CLI on the same
// store: a result is refused before success (409, exit 2), streamed after
// it with its sha256 in the trailer and the audit (checked here
// independently), refused when larger than max_bytes (502), and another
// agent's operation answers 404 with nothing sent to the provider. The
// canary secret appears in no answer and no audit.
func TestServeAndCLIFetchResult(t *testing.T) {
	t.Parallel()
	content := `{"custom_id":"r1","result":"ok"}` + "\n" + `{"custom_id":"r2","result":"ok"}` + "\n"
	prov := &resultFiles{files: map[string]string{"file-done-1": content, "file-done-big": strings.Repeat("x", 300), "file-done-chunked": strings.Repeat("y", 300)}, release: make(chan struct{})}
	srv := httptest.NewServer(prov.handler())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cdir := filepath.Join(dir, "contracts")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfile := filepath.Join(cdir, "proc-result.yaml")
	if err := os.WriteFile(cfile, []byte(fmt.Sprintf(`version: 1
name: proc-result
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:PROC_TOKEN"}
  timeout: 1s
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
result:
  require: [{path: output_file_id, kind: string}]
  fetch: {url: "%s/files/{output_file_id}/content", max_bytes: 200}
backoff: {base: 150ms, max: 300ms}
limits: {deadline: 60s, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
`, srv.URL, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := fmt.Sprintf("tokens:\n  - {name: build-agent, role: agent, sha256: %q}\n  - {name: rival-agent, role: agent, sha256: %q}\n", sum(tokA), sum(tokB))
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "pw.db")
	p := start(t, "serve", "--listen", "127.0.0.1:0", "--store", store, "--contracts", cdir, "--tokens", filepath.Join(dir, "tokens.yaml"))
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	base := listenAddr(t, p)

	for _, op := range []struct{ id, job string }{{"op-done", "done-1"}, {"op-slow", "slow"}, {"op-big", "done-big"}, {"op-chunked", "done-chunked"}} {
		call(t, base, tokA, "POST", "/v1/operations", `{"operation_id":"`+op.id+`","contract":"proc-result","job_id":"`+op.job+`"}`, 201)
	}
	for _, id := range []string{"op-done", "op-big", "op-chunked"} {
		waitFor(t, id+" to succeed", func() bool {
			_, body := send(t, base, tokA, "GET", "/v1/operations/"+id, "", "")
			return strings.Contains(body, `"phase": "succeeded"`)
		})
	}

	// Before success: refused, naming the phase, nothing sent.
	if code, body := send(t, base, tokA, "GET", "/v1/operations/op-slow/result", "", ""); code != 409 || !strings.Contains(body, "waiting") {
		t.Fatalf("result of a waiting operation: %d %s, want 409 naming the phase", code, body)
	}
	cli := start(t, "result", "op-slow", "--store", store, "--contract", cfile)
	if code := cli.exitCode(t); code != 2 || !strings.Contains(cli.stderr.String(), "only once it has succeeded") {
		t.Fatalf("CLI result of a waiting operation: exit %d, %s", code, cli.stderr.String())
	}
	if prov.count() != 0 {
		t.Fatalf("%d fetches reached the provider before success", prov.count())
	}

	// Another agent: 404, exactly as for a missing operation, nothing sent.
	code, body := send(t, base, tokB, "GET", "/v1/operations/op-done/result", "", "")
	if code != 404 || strings.Contains(body, "done-1") || prov.count() != 0 {
		t.Fatalf("rival agent: %d %s, %d fetches", code, body, prov.count())
	}

	// After success: streamed, its digest in the trailer and in the audit.
	h := sha256.Sum256([]byte(content))
	want := hex.EncodeToString(h[:])
	req, _ := http.NewRequest("GET", base+"/v1/operations/op-done/result", nil)
	req.Header.Set("Authorization", "Bearer "+tokA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || string(got) != content {
		t.Fatalf("result: %d %q %v", resp.StatusCode, got, err)
	}
	if tr := resp.Trailer.Get("Pollwarden-Result-Sha256"); tr != want {
		t.Fatalf("trailer sha256 %q, want %s", tr, want)
	}

	// The CLI fetches again into a file, renamed into place when whole.
	out := filepath.Join(dir, "result.jsonl")
	cli = start(t, "result", "op-done", "--store", store, "--contract", cfile, "--out", out)
	if code := cli.exitCode(t); code != 0 {
		t.Fatalf("CLI result: exit %d %s", code, cli.stderr.String())
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != content {
		t.Fatalf("--out file: %q %v", b, err)
	}
	_, story := send(t, base, tokA, "GET", "/v1/operations/op-done/audit", "", "")
	if n := strings.Count(story, fmt.Sprintf("result fetched: %d bytes, sha256 %s", len(content), want)); n != 2 {
		t.Fatalf("the story holds %d fetched lines with the digest, want 2:\n%s", n, story)
	}
	if strings.Count(story, "result fetch started") != 2 {
		t.Fatalf("story lacks the started lines:\n%s", story)
	}

	// Larger than max_bytes: 502 naming the bound; no file left behind.
	code, body = send(t, base, tokA, "GET", "/v1/operations/op-big/result", "", "")
	if code != 502 || !strings.Contains(body, "max_bytes 200") {
		t.Fatalf("big result: %d %s, want 502 naming max_bytes", code, body)
	}
	// Past the bound while streaming (no Content-Length): the response is
	// aborted, so the client sees a broken body, never a whole one.
	req, _ = http.NewRequest("GET", base+"/v1/operations/op-chunked/result", nil)
	req.Header.Set("Authorization", "Bearer "+tokA)
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("chunked result: %v %v", resp, err)
	}
	close(prov.release) // the first 150 bytes are out: send the rest
	got, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatalf("a result past the bound read cleanly: %d bytes", len(got))
	}
	_, story = send(t, base, tokA, "GET", "/v1/operations/op-chunked/audit", "", "")
	if !strings.Contains(story, "result fetch failed: the result passed the contract's max_bytes 200") {
		t.Fatalf("story of the cut-off fetch:\n%s", story)
	}
	bigOut := filepath.Join(dir, "big.txt")
	cli = start(t, "result", "op-big", "--store", store, "--contract", cfile, "--out", bigOut)
	if code := cli.exitCode(t); code != 30 || !strings.Contains(cli.stderr.String(), "max_bytes") {
		t.Fatalf("CLI big result: exit %d %s", code, cli.stderr.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "big") || strings.Contains(e.Name(), "partial") {
				t.Fatalf("a partial result was left: %s", e.Name())
			}
		}
	}
	for _, id := range []string{"op-done", "op-big", "op-slow"} {
		_, events := send(t, base, tokA, "GET", "/v1/operations/"+id+"/audit", "", "application/json")
		if strings.Contains(events, canary) {
			t.Fatalf("the canary is in %s's audit", id)
		}
	}
	if strings.Contains(p.stdout.String()+p.stderr.String(), canary) {
		t.Fatal("the canary is in serve's output")
	}
}
