package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestCallersTracestateGoesNowhere is the attack of an agent that sends a
// tracestate (vendor data, here a canary) with its trace context on
// submit_job, under a contract with propagate_trace: the provider received
// it verbatim on the submission and the collector with every span. Only
// the trace's ids travel.
func TestCallersTracestateGoesNowhere(t *testing.T) {
	t.Parallel()
	const stateCanary = "acme=tenant-7f3-tracestate-canary"
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("sub-1", fp.State("running", nil))
	var mu sync.Mutex
	var seen []http.Header
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		srv.Handler().ServeHTTP(w, r)
	}))
	defer prov.Close()
	recv := newRecorder(t, "/v1/traces")
	dir := t.TempDir()
	cdir := tracedContract(t, dir, prov.URL)
	h := startMCP(t, []string{"mcp", "--contracts", cdir, "--store", filepath.Join(dir, "pw.db"), "--otlp-endpoint", recv.URL},
		[]string{"PROC_TOKEN=" + canary})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.session.CallTool(ctx, &sdk.CallToolParams{Name: "submit_job",
		Meta:      sdk.Meta{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01", "tracestate": stateCanary},
		Arguments: map[string]any{"contract": "traced", "body": map[string]any{"prompt": "hello"}, "operation_id": "op-ts"}})
	if err != nil || res.IsError {
		t.Fatalf("submit_job: %v %+v; stderr %s", err, res, h.stderr.String())
	}
	waitFor(t, "a status request after the submission", func() bool { return srv.Count("sub-1") > 0 })
	_ = h.session.Close()
	mu.Lock()
	defer mu.Unlock()
	propagated := false
	for _, hd := range seen {
		if strings.HasPrefix(hd.Get("traceparent"), "00-"+callerTrace) {
			propagated = true
		}
		if ts := hd.Values("tracestate"); len(ts) > 0 {
			t.Errorf("the provider received tracestate %q", ts)
		}
	}
	if !propagated {
		t.Fatalf("no request carried the caller's trace: the test proves nothing (%d requests)", len(seen))
	}
	// exportedSpans fails on the canary anywhere in the exported bytes.
	spans := exportedSpans(t, recv, "tenant-7f3-tracestate-canary")
	if len(spansNamed(spans, "pollwarden.submit")) == 0 {
		t.Fatal("no submit span exported")
	}
}
