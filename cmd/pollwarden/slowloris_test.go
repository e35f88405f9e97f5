package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// closedWithin is the generous bound for the server to drop a slow
// client: many times --read-timeout, so a loaded machine cannot fail it.
const closedWithin = 25 * time.Second

// TestServeDropsSlowClients performs slowloris against a real daemon: 20
// unauthenticated connections announce a 100000-byte body and never send
// it, 20 more send their headers one byte at a time and never finish.
// With --read-timeout 1s the daemon closes every one of them, and an
// agent's request made while all 40 are open is answered. Headers over
// 64 KiB are refused.
func TestServeDropsSlowClients(t *testing.T) {
	t.Parallel()
	r := startDaemon(t, "--read-timeout", "1s")
	addr := strings.TrimPrefix(r.base, "http://")

	stop := make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	defer halt()
	var wg sync.WaitGroup
	closed := make(chan error, 40)
	for i := range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if i < 20 {
			// Headers complete, body announced and never sent.
			if _, err := io.WriteString(c, "POST /v1/operations HTTP/1.1\r\nHost: pw\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
		} else {
			// Headers dripped a byte at a time, never finished.
			wg.Go(func() {
				head := "GET /v1/operations HTTP/1.1\r\nHost: pw\r\nX-Slow: " + strings.Repeat("a", 4096)
				for j := 0; j < len(head); j++ {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					if _, err := c.Write([]byte{head[j]}); err != nil {
						return // the server closed the connection
					}
				}
			})
		}
		go func() { closed <- waitClosed(c) }()
	}

	// While every slow connection is open, an agent is served.
	call(t, r.base, "agent-token", "GET", "/v1/operations", "", 200)

	for range 40 {
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
	}
	halt()
	wg.Wait()
	// And after the attack too.
	call(t, r.base, "agent-token", "GET", "/v1/operations", "", 200)

	// Headers beyond 64 KiB are refused, not read on.
	req, _ := http.NewRequest("GET", r.base+"/v1/operations", nil)
	req.Header.Set("Authorization", "Bearer agent-token")
	req.Header.Set("X-Padding", strings.Repeat("p", 100<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB of headers: %d, want 431", resp.StatusCode)
	}
}

// waitClosed reads (and discards any answer) until the server closes c;
// an error when it is still open after closedWithin.
func waitClosed(c net.Conn) error {
	_ = c.SetReadDeadline(time.Now().Add(closedWithin))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errors.New("a slow connection was still open after " + closedWithin.String())
	}
	return nil // EOF or reset: closed by the server
}

// TestServeReadTimeoutSparesLongAnswers: --read-timeout bounds reading a
// request, never the answer. A long-poll and an MCP wait_job, each held
// well past a 1 s read timeout, end with the phase change they waited for.
// Ten requests at the contract's backoff (at least 75 ms, then 150 ms,
// apart) cannot exhaust the budget within the first second, so an answer
// cut by the read deadline would still say waiting.
func TestServeReadTimeoutSparesLongAnswers(t *testing.T) {
	t.Parallel()
	r := startDaemon(t, "--read-timeout", "1s")
	r.srv.Script("lp", fp.State("running", nil))
	r.srv.Script("mcp", fp.State("running", nil))

	call(t, r.base, "agent-token", "POST", "/v1/operations", `{"operation_id":"lp","contract":"proc-test","job_id":"lp"}`, 201)
	op := call(t, r.base, "agent-token", "GET", "/v1/operations/lp?wait=30s", "", 200)
	if op["phase"] == "waiting" {
		t.Fatalf("the long-poll was answered before the phase changed: %v", op)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "read-timeout-test", Version: "v0"}, nil)
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: r.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"agent-token", http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer session.Close()
	tool := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", name, err, res)
		}
		var m map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &m)
		return m
	}
	tool("watch_job", map[string]any{"contract": "proc-test", "job_id": "mcp", "operation_id": "mcp"})
	if got := tool("wait_job", map[string]any{"operation_id": "mcp", "max_wait_seconds": 30}); got["phase"] == "waiting" {
		t.Fatalf("wait_job was answered before the phase changed: %v", got)
	}
}
