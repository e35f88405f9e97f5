package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpHost plays an MCP host: it starts `pollwarden mcp` (this test binary
// playing main) with the official SDK's CommandTransport and records what
// crosses the boundary, so tests can count tool calls, check that the
// client sent nothing while it waited, and look for the canary secret.
type mcpHost struct {
	t       *testing.T
	session *sdk.ClientSession
	stderr  *syncBuffer

	// acks is from acknowledgements.
	acks <-chan []string
	// updated receives the URI of each notifications/resources/updated.
	updated chan string

	mu sync.Mutex
	// sent is every method the client sent, in order; a tools/call is
	// recorded as "tools/call NAME".
	sent []string
	// answers is every raw tool result, for the canary check.
	answers []string
}

// startMCP starts `pollwarden` with args and extra environment (the
// credential goes there, as the host configuration's "env") and connects.
func startMCP(t *testing.T, args, env []string) *mcpHost {
	t.Helper()
	h := &mcpHost{t: t, stderr: &syncBuffer{}, updated: make(chan string, 64)}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "PW_TEST_BE_MAIN=1"), env...)
	cmd.Stderr = h.stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "pollwarden-test-host", Version: "v0"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			h.updated <- req.Params.URI
		},
	})
	client.AddSendingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			name := method
			if p, ok := req.GetParams().(*sdk.CallToolParams); ok {
				name += " " + p.Name
			}
			h.mu.Lock()
			h.sent = append(h.sent, name)
			h.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	h.acks = acknowledgements(client)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, h.stderr.String())
	}
	h.session = session
	t.Cleanup(func() {
		_ = session.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, a := range append(slices.Clone(h.answers), h.stderr.String()) {
			if strings.Contains(a, canary) {
				t.Errorf("the canary secret crossed the MCP boundary or reached stderr: %s", a)
			}
		}
	})
	return h
}

// call calls a tool; args is the JSON object sent, kept verbatim (so a
// transcript shows it as written). It returns the answer's text (the
// structured content's JSON, in the server's field order, or the error
// message), the structured content decoded, and isError.
func (h *mcpHost) call(name, args string) (string, map[string]any, bool) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := h.session.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		h.t.Fatalf("%s %s: %v; stderr: %s", name, args, err, h.stderr.String())
	}
	raw, _ := json.Marshal(res)
	h.mu.Lock()
	h.answers = append(h.answers, string(raw))
	h.mu.Unlock()
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	var m map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &m); err != nil {
			h.t.Fatal(err)
		}
		// A transcript shows the text; it must say what the structured
		// content says.
		var fromText map[string]any
		if err := json.Unmarshal([]byte(text.String()), &fromText); err != nil || !reflect.DeepEqual(fromText, m) {
			h.t.Fatalf("%s: the text content is not the structured content: %q (%v)", name, text.String(), err)
		}
	}
	return text.String(), m, res.IsError
}

// subscribe subscribes to uri and returns once the server has registered
// the subscription.
func (h *mcpHost) subscribe(ctx context.Context, uri string) {
	h.t.Helper()
	subscribe(ctx, h.t, h.session, h.acks, uri)
}

// acknowledgements makes client report, on the returned channel, the
// resource URIs of each notifications/subscriptions/acknowledged: the
// server sends it once it has registered the subscriptions of a
// subscriptions/listen stream, the protocol's own signal that a change
// from then on will be notified. Call it before Connect.
func acknowledgements(client *sdk.Client) <-chan []string {
	acks := make(chan []string, 16)
	client.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if p, ok := req.GetParams().(*sdk.SubscriptionsAcknowledgedParams); ok {
				acks <- slices.Clone(p.Notifications.ResourceSubscriptions)
			}
			return next(ctx, method, req)
		}
	})
	return acks
}

// subscribe subscribes session to uri and returns once the server has
// registered the subscription: at once under the legacy protocol, whose
// resources/subscribe answers after registering; under 2026-07-28, where
// the SDK's Subscribe returns before its subscriptions/listen stream is
// open, when the server acknowledges the stream (acks is from
// acknowledgements).
func subscribe(ctx context.Context, t *testing.T, session *sdk.ClientSession, acks <-chan []string, uri string) {
	t.Helper()
	if err := session.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
	if session.InitializeResult().ProtocolVersion < "2026-07-28" {
		return
	}
	for {
		select {
		case uris := <-acks:
			if slices.Contains(uris, uri) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no subscriptions/acknowledged for %s: %v", uri, ctx.Err())
		}
	}
}

// methods returns what the client has sent so far.
func (h *mcpHost) methods() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.sent)
}
