package mcp_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/mcp"
	"github.com/pollwarden/pollwarden/sqlite"
)

// TestGetResult runs get_result against a real `pollwarden mcp`: refused
// before success with nothing sent, the text after it with the digest
// recorded in the audit, and a clear error telling the size for a result
// larger than max_bytes and for one that is not text.
func TestGetResult(t *testing.T) {
	content := "line 1\nline 2\n"
	files := map[string]string{"done": content, "big": strings.Repeat("x", 500), "bin": "\xff\xfe\x00binary"}
	var fetches atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "slow" {
			fmt.Fprint(w, `{"state":"running"}`)
			return
		}
		fmt.Fprintf(w, `{"state":"succeeded","file":%q}`, r.PathValue("id"))
	})
	mux.HandleFunc("GET /files/{id}", func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+canary {
			w.WriteHeader(401)
			return
		}
		io.WriteString(w, files[r.PathValue("id")])
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	contracts := filepath.Join(dir, "contracts")
	if err := os.Mkdir(contracts, 0o700); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf(`version: 1
name: mcp-result
status:
  url: "%[1]s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:MCP_TEST_TOKEN"}
  timeout: 2s
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
result:
  require: [{path: file, kind: string}]
  fetch: {url: "%[1]s/files/{file}", max_bytes: 100}
backoff: {base: 200ms, max: 1s}
limits: {deadline: 120s, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
`, srv.URL)
	if err := os.WriteFile(filepath.Join(contracts, "mcp-result.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "pw.db")
	cmd := exec.Command(os.Args[0], "mcp", "--store", store, "--contracts", contracts)
	cmd.Env = append(os.Environ(), "PW_TEST_BE_MAIN=1", "MCP_TEST_TOKEN="+canary)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "v0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; %s", err, stderr.String())
	}
	defer session.Close()
	call := func(name string, args map[string]any) (*sdk.CallToolResult, string) {
		t.Helper()
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		raw, _ := json.Marshal(res)
		if strings.Contains(string(raw), canary) {
			t.Fatalf("the canary is in the answer of %s", name)
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return res, text.String()
	}
	for _, job := range []string{"slow", "done", "big", "bin"} {
		if res, text := call("watch_job", map[string]any{"contract": "mcp-result", "job_id": job, "operation_id": "op-" + job}); res.IsError {
			t.Fatalf("watch_job %s: %s", job, text)
		}
	}
	for _, job := range []string{"done", "big", "bin"} {
		for {
			_, text := call("wait_job", map[string]any{"operation_id": "op-" + job, "max_wait_seconds": 5})
			if strings.Contains(text, `"phase":"succeeded"`) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("op-%s never succeeded: %s", job, text)
			}
		}
	}

	if res, text := call(mcp.ToolGetResult, map[string]any{"operation_id": "op-slow"}); !res.IsError || !strings.Contains(text, "waiting") || fetches.Load() != 0 {
		t.Fatalf("before success: error %v %q, %d fetches", res.IsError, text, fetches.Load())
	}
	res, text := call(mcp.ToolGetResult, map[string]any{"operation_id": "op-done"})
	h := sha256.Sum256([]byte(content))
	want := hex.EncodeToString(h[:])
	if res.IsError || text != content {
		t.Fatalf("get_result: error %v, text %q", res.IsError, text)
	}
	if got, _ := res.StructuredContent.(map[string]any); got["sha256"] != want {
		t.Fatalf("structured %v, want sha256 %s", res.StructuredContent, want)
	}
	if res, text := call(mcp.ToolGetResult, map[string]any{"operation_id": "op-big"}); !res.IsError || !strings.Contains(text, "max_bytes 100") {
		t.Fatalf("big: error %v %q", res.IsError, text)
	}
	if res, text := call(mcp.ToolGetResult, map[string]any{"operation_id": "op-bin"}); !res.IsError || !strings.Contains(text, "9 bytes") || !strings.Contains(text, "not UTF-8") {
		t.Fatalf("binary: error %v %q", res.IsError, text)
	}

	st, err := sqlite.Open(ctx, store, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	events, err := st.EventList(ctx, "op-done")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range events {
		if e.Kind == pollwarden.EventResultFetched && e.Data.SHA256 == want && e.Data.Bytes == int64(len(content)) {
			found = true
		}
		if strings.Contains(string(e.Payload), canary) {
			t.Fatalf("the canary is in event %s", e.Kind)
		}
	}
	if !found {
		t.Fatalf("no result_fetched event with sha256 %s", want)
	}
}
