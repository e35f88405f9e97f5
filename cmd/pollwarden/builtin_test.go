package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestWaitOnExtendedBuiltin is the SPEC's example of extends: the
// openai-batch built-in moved to a loopback fake by base_url, with its own
// credential, run by a real `pollwarden wait` process against OpenAI's own
// example bodies (a 429 with Retry-After, then a completed batch). The
// local copy shortens the built-in's 30 s base delay, which a 429 would
// otherwise raise past the 3 s Retry-After.
func TestWaitOnExtendedBuiltin(t *testing.T) {
	t.Parallel()
	fixtures := filepath.Join("..", "..", "contract", "builtin", "testdata", "openai-batch")
	var mu sync.Mutex
	var seen []string
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		name := []string{"rate_limited", "succeeded"}[min(n, 1)]
		n++
		mu.Unlock()
		body, err := os.ReadFile(filepath.Join(fixtures, name+".json"))
		if err != nil {
			t.Error(err)
		}
		status := 200
		if meta, err := os.ReadFile(filepath.Join(fixtures, name+".meta.json")); err == nil {
			var m struct {
				Status  int               `json:"status"`
				Headers map[string]string `json:"headers"`
			}
			_ = json.Unmarshal(meta, &m)
			status = m.Status
			for k, v := range m.Headers {
				w.Header().Set(k, v)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	file := filepath.Join(dir, "openai-batch-local.yaml")
	spec := fmt.Sprintf(`{version: 1, extends: openai-batch, name: openai-batch-local, base_url: %q, status: {credential: {header: Authorization, scheme: Bearer, secret: "env:OPENAI_API_KEY"}}, backoff: {base: 200ms, max: 1s}}`, srv.URL)
	if err := os.WriteFile(file, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startWith(t, []string{"OPENAI_API_KEY=" + canary}, "wait", "--contract", file, "--job-id", "batch_abc123",
		"--store", filepath.Join(dir, "pw.db"), "--json")
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr.String())
	}
	out := outcome(t, p)
	res, _ := out["result"].(map[string]any)
	if out["contract"] != "openai-batch-local" || res["output_file_id"] != "file-cvaTdG" || out["rate_limited_used"] != float64(1) {
		t.Fatalf("outcome %v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "GET /v1/batches/batch_abc123 Bearer " + canary
	if len(seen) != 2 || seen[0] != want || seen[1] != want {
		t.Fatalf("requests %q, want twice %q", seen, want)
	}
	if strings.Contains(p.stdout.String()+p.stderr.String(), canary) {
		t.Fatal("the credential was printed")
	}
}
