package httpapi

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/operations"
)

// maxWait caps a long-poll (SPEC: at most 60 s), below the usual 60–120 s
// idle timeouts of proxies so that a held answer is not cut off on the way.
const maxWait = 60 * time.Second

// get answers the record; with ?wait=30s it holds the answer until the
// phase changes or the time passes, so an agent waits without spending a
// request per second. A longer wait is cut to 60 s rather than refused: the
// answer says where the operation stands either way. A finished operation
// (succeeded, failed, cancelled, expired) answers at once, since its phase
// can no longer change.
func (a *api) get(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	p := operations.WaitParams{Caller: callerOf(r), ID: r.PathValue("id")}
	if s := r.URL.Query().Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return unprocessable("wait %s: want a duration such as 30s (at most 60s)", display.Clip(s))
		}
		p.For = min(d, maxWait)
	}
	op, err := a.ops.Wait(r.Context(), p)
	if err != nil {
		if r.Context().Err() != nil {
			return nil // the caller has gone; nobody reads an answer
		}
		return problem(err)
	}
	writeJSON(w, http.StatusOK, p.Caller.Outcome(op))
	return nil
}

// listAnswer wraps the list so that fields (a cursor) can be added later
// without breaking clients.
type listAnswer struct {
	Operations []pollwarden.Outcome `json:"operations"`
}

// list answers operations, newest first, filtered by ?phase= and bounded
// by ?limit= (default 100, at most 1000). An agent token lists only its
// own operations (unless its scope is all).
func (a *api) list(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	q := r.URL.Query()
	caller := callerOf(r)
	ops, err := a.ops.List(r.Context(), operations.ListParams{Caller: caller, Phase: q.Get("phase"), Limit: q.Get("limit")})
	if err != nil {
		return problem(err)
	}
	out := listAnswer{Operations: make([]pollwarden.Outcome, len(ops))}
	for i, op := range ops {
		out.Operations[i] = caller.Outcome(op)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// auditAnswer is the JSON form of an operation's audit trail.
type auditAnswer struct {
	OperationID string             `json:"operation_id"`
	Events      []pollwarden.Event `json:"events"`
}

// audit answers the operation's story, one line per event (R26), as
// text/plain for a person; with Accept: application/json, the events
// themselves, hashes included, for a program.
func (a *api) audit(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	id := r.PathValue("id")
	events, err := a.ops.Events(r.Context(), callerOf(r), id)
	if err != nil {
		return problem(err)
	}
	if wantsJSON(r) {
		if events == nil {
			events = []pollwarden.Event{}
		}
		writeJSON(w, http.StatusOK, auditAnswer{OperationID: id, Events: events})
		return nil
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	for _, line := range audit.Story(events, time.UTC) {
		_, _ = w.Write([]byte(line + "\n"))
	}
	return nil
}

// wantsJSON reports whether the Accept header asks for JSON (with q > 0).
// Anything else, including no header, gets the story as text.
func wantsJSON(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || mt != "application/json" {
			continue
		}
		if q, err := strconv.ParseFloat(params["q"], 64); err == nil && q == 0 {
			continue
		}
		return true
	}
	return false
}
