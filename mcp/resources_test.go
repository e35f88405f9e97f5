package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestOperationResourceOverStdio subscribes to an operation's resource
// over a real process's stdio, sees notifications/resources/updated when
// the phase changes (waiting, then escalated on the budget), and reads the
// outcome JSON.
func TestOperationResourceOverStdio(t *testing.T) {
	updated := make(chan string, 16)
	r := newRigWith(t, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var templates []string
	for tpl, err := range r.session.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, tpl.URITemplate)
	}
	if len(templates) != 1 || templates[0] != "pollwarden://operations/{id}" {
		t.Fatalf("resource templates %v", templates)
	}
	uri := "pollwarden://operations/op-res"
	if _, err := r.session.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err == nil {
		t.Fatal("reading an unknown operation was accepted")
	}

	r.srv.Script("held", fp.State("running", nil))
	r.ok("watch_job", map[string]any{"contract": "mcp-test", "job_id": "held", "operation_id": "op-res"})
	r.subscribe(ctx, uri)
	r.srv.Script("held", fp.Failed("export quota exceeded"))
	select {
	case got := <-updated:
		if got != uri {
			t.Fatalf("notified about %s, want %s", got, uri)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/resources/updated after the phase changed")
	}
	res, err := r.session.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/json" || res.Contents[0].URI != uri {
		t.Fatalf("contents %v", res.Contents)
	}
	text := res.Contents[0].Text
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil || out["phase"] != "failed" || out["credential_name"] != "env:MCP_TEST_TOKEN" {
		t.Fatalf("resource %s: %v", text, err)
	}
	if strings.Contains(text, canary) {
		t.Fatal("the canary secret reached a resource")
	}
	if err := r.session.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
}

// TestSubscribeToForeignURIIsInvalidParams: resources/subscribe to a URI
// that is not one of this server's (another scheme, another path) answers
// JSON-RPC -32602 (invalid params) naming the template, not the code 0 of
// a plain error, which clients cannot tell from a server fault. Over a
// real process, under 2025-11-25, where subscribe is a request.
func TestSubscribeToForeignURIIsInvalidParams(t *testing.T) {
	r, _ := startTaskServer(t)
	r.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "subscribe-test", "version": "0"}})
	r.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	for _, uri := range []string{"file:///etc/passwd", "pollwarden://tasks/x", "https://example.com/operations/op-1"} {
		code, msg := r.rpcError("resources/subscribe", map[string]any{"uri": uri})
		if code != -32602 || !strings.Contains(msg, "pollwarden://operations/{id}") {
			t.Errorf("subscribe %s: code %d %q, want -32602 naming the template", uri, code, msg)
		}
	}
}
