package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/operations"
)

// ResourcePrefix starts every operation's resource URI:
// pollwarden://operations/{id}. Reading it returns the outcome JSON;
// subscribing to it brings notifications/resources/updated on every phase
// change, so a host can wait without calling a tool.
const ResourcePrefix = "pollwarden://operations/"

// ResourceTemplate is the URI template of the operation resources.
const ResourceTemplate = ResourcePrefix + "{id}"

// ResourceURI is the resource URI of operation id.
func ResourceURI(id string) string { return ResourcePrefix + id }

func operationID(uri string) (string, bool) {
	id, ok := strings.CutPrefix(uri, ResourcePrefix)
	return id, ok && pollwarden.CheckOperationID("operation_id", id) == nil
}

// readOperation answers resources/read with the outcome JSON.
func (s *server) readOperation(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := operationID(uri)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	op, err := s.visible(ctx, id)
	if errors.Is(err, pollwarden.ErrNotFound) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, internal(err)
	}
	b, err := json.Marshal(s.who(ctx).Outcome(op))
	if err != nil {
		return nil, internal(err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

// watchers turns the service's phase watches (operations.WatchPhase) into
// notifications/resources/updated: one goroutine per subscribed
// operation, alive while a live session is subscribed to it. The SDK keeps
// the list of subscribed sessions and sends the notifications; this only
// decides when an operation's phase changed.
type watchers struct {
	s  *server
	mu sync.Mutex
	// by URI: the sessions that subscribed (the SDK forgets a closed
	// session on its own; the watcher prunes them from here).
	w map[string]*watcher
}

type watcher struct {
	sessions map[*sdk.ServerSession]struct{}
	stop     context.CancelFunc
}

// subscribe registers req's session for uri, only for an operation the
// caller may see (another agent's is not found, as a missing one): the SDK
// then sends this session every update of uri. It returns only once the
// operation's change signals are being watched: the SDK acknowledges the
// subscription to the client after this returns (resources/subscribe's
// answer, or notifications/subscriptions/acknowledged on a
// subscriptions/listen stream), so a client that waited for that is
// notified of every phase change after it.
func (ws *watchers) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	uri := req.Params.URI
	id, ok := operationID(uri)
	if !ok {
		// Invalid params, as JSON-RPC names a request for a URI this
		// server does not hold (a plain error would go out as code 0).
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("cannot subscribe to %s: resources are %s", display.Clip(uri), ResourceTemplate)}
	}
	// Checked for every session, also when another is already subscribed.
	if _, err := ws.s.visible(ctx, id); err != nil {
		if errors.Is(err, pollwarden.ErrNotFound) {
			return sdk.ResourceNotFoundError(uri)
		}
		return internal(err)
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.w[uri]; w != nil {
		w.sessions[req.Session] = struct{}{}
		return nil
	}
	pw, err := ws.s.ops.WatchPhase(ctx, ws.s.who(ctx), id)
	if err != nil {
		if operations.KindOf(err) == operations.NotFound {
			return sdk.ResourceNotFoundError(uri)
		}
		return internal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	w := &watcher{sessions: map[*sdk.ServerSession]struct{}{req.Session: {}}, stop: stop}
	ws.w[uri] = w
	go ws.run(wctx, uri, w, pw)
	return nil
}

func (ws *watchers) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	uri := req.Params.URI
	if w := ws.w[uri]; w != nil {
		delete(w.sessions, req.Session)
		if len(w.sessions) == 0 {
			w.stop()
			delete(ws.w, uri)
		}
	}
	return nil
}

// alive drops the sessions that have closed and reports whether any is
// left; when none is, the watcher is removed.
func (ws *watchers) alive(uri string, w *watcher) bool {
	live := map[*sdk.ServerSession]bool{}
	for ss := range ws.s.srv.Sessions() {
		live[ss] = true
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for ss := range w.sessions {
		if !live[ss] {
			delete(w.sessions, ss)
		}
	}
	if len(w.sessions) > 0 {
		return true
	}
	if ws.w[uri] == w {
		delete(ws.w, uri)
	}
	w.stop()
	return false
}

// run notifies the subscribers of uri on each phase change the service's
// watch reports; on each of its re-reads it drops the sessions that have
// closed.
func (ws *watchers) run(ctx context.Context, uri string, w *watcher, pw *operations.PhaseWatch) {
	defer pw.Stop()
	for {
		changed, err := pw.Next(ctx)
		switch {
		case err != nil:
			return
		case changed:
			_ = ws.s.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri})
		case !ws.alive(uri, w):
			return
		}
	}
}
