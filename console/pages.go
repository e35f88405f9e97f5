package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/tokens"
)

// listLimit bounds each list on the queue page.
const listLimit = 200

// filter is the queue's filter form for the operations below the
// escalations.
type filter struct {
	Phase, Contract, Reason, Text string
}

// phases and reasons offered by the filter form.
var (
	filterPhases = []pollwarden.Phase{pollwarden.PhaseWaiting, pollwarden.PhaseSucceeded, pollwarden.PhaseFailed,
		pollwarden.PhaseCancelled, pollwarden.PhaseExpired, pollwarden.PhaseEscalated}
	filterReasons = []pollwarden.Reason{pollwarden.ReasonDeadlineExceeded, pollwarden.ReasonRequestBudgetExhausted,
		pollwarden.ReasonRateLimited, pollwarden.ReasonUnknownState, pollwarden.ReasonAuthorizationDenied,
		pollwarden.ReasonProviderFailure, pollwarden.ReasonIntegrationFailure}
)

func readFilter(q url.Values) (filter, string) {
	f := filter{Phase: q.Get("phase"), Contract: q.Get("contract"), Reason: q.Get("reason"), Text: strings.TrimSpace(q.Get("q"))}
	if f.Phase != "" && !slices.Contains(filterPhases, pollwarden.Phase(f.Phase)) {
		return f, fmt.Sprintf("Unknown phase %q: choose one from the list.", clean(f.Phase))
	}
	if f.Reason != "" && !slices.Contains(filterReasons, pollwarden.Reason(f.Reason)) {
		return f, fmt.Sprintf("Unknown reason %q: choose one from the list.", clean(f.Reason))
	}
	return f, ""
}

// queue is the console's home: the escalations waiting for a person
// first, then the other operations under the filter. Without a session it
// is the sign-in form.
func (c *Console) queue(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok {
		c.signinPage(w, r, http.StatusOK, "")
		return
	}
	f, problem := readFilter(r.URL.Query())
	now := c.now()
	escalated, err := c.list(r.Context(), v.Caller, pollwarden.PhaseEscalated, filter{})
	if err != nil {
		c.internal(w, r, err)
		return
	}
	// The longest-waiting decision first.
	slices.SortStableFunc(escalated, func(a, b *pollwarden.Operation) int { return escalatedAt(a).Compare(escalatedAt(b)) })
	var others []*pollwarden.Operation
	if problem == "" {
		others, err = c.list(r.Context(), v.Caller, pollwarden.Phase(f.Phase), f)
		if err != nil {
			c.internal(w, r, err)
			return
		}
	}
	// A filter the page cannot apply is refused as every door refuses bad
	// input (422), with the escalations still shown above it.
	status := http.StatusOK
	if problem != "" {
		status = http.StatusUnprocessableEntity
	}
	c.render(w, r, status, "queue", map[string]any{
		"Viewer": v, "Incidents": c.openIncidents(r, v), "Escalated": c.views(r.Context(), v.Caller, escalated, now), "Others": c.views(r.Context(), v.Caller, others, now),
		"Filter": f, "Problem": problem, "Phases": filterPhases, "Reasons": filterReasons,
		"Contracts": c.ops.Contracts().Names(), "Events": "/ui/events",
	})
}

func escalatedAt(op *pollwarden.Operation) time.Time {
	if op.Escalation != nil {
		return op.Escalation.At
	}
	return op.StartedAt
}

// list reads the operations in phase ("" for all) that who may see and f
// matches, as the use case lists them for every door: the filter is the
// store's, applied before the page's limit.
func (c *Console) list(ctx context.Context, who tokens.Caller, phase pollwarden.Phase, f filter) ([]*pollwarden.Operation, error) {
	return c.ops.List(ctx, operations.ListParams{Caller: operations.Caller{Caller: who}, Phase: string(phase), Limit: strconv.Itoa(listLimit),
		Contract: f.Contract, Reason: f.Reason, Text: f.Text})
}

// views builds the rows of a list; only escalated and waiting operations
// can have a pending extension request, so only theirs read events.
func (c *Console) views(ctx context.Context, who tokens.Caller, ops []*pollwarden.Operation, now time.Time) []opView {
	out := make([]opView, 0, len(ops))
	for _, op := range ops {
		var events []pollwarden.Event
		if op.Phase == pollwarden.PhaseWaiting || op.Phase == pollwarden.PhaseEscalated {
			events, _ = c.ops.Events(ctx, operations.Caller{Caller: who}, op.ID) // a row without its requests beats no queue
		}
		out = append(out, c.view(op, events, now))
	}
	return out
}

// operation is one operation's page: where it stands, its budgets, the
// story, and for an approver the decision form.
func (c *Console) operation(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok {
		c.signinPage(w, r, http.StatusUnauthorized, "Sign in to see this operation.")
		return
	}
	c.showOperation(w, r, v, http.StatusOK, "", r.URL.Query().Get("decided"))
}

func (c *Console) showOperation(w http.ResponseWriter, r *http.Request, v viewer, status int, problem, decided string) {
	id := r.PathValue("id")
	op, err := c.visible(r.Context(), v.Caller, id)
	if operations.KindOf(err) == operations.NotFound {
		c.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no operation %s.", clean(id)))
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	events, err := c.ops.Events(r.Context(), operations.Caller{Caller: v.Caller}, id)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	now := c.now()
	view := c.view(op, events, now)
	c.render(w, r, status, "operation", map[string]any{
		"Viewer": v, "Op": view, "Story": c.story(events), "Timeline": layoutTimeline(events, op.StartedAt, op.DeadlineAt, now), "Problem": problem, "Decided": clean(decided),
		"Waiting": op.Phase == pollwarden.PhaseWaiting, "CanCancel": c.cancelDocumented(op) && operations.Caller{Caller: v.Caller}.May(operations.ActionCancel, op, "") == nil,
		"Events": "/ui/operations/" + url.PathEscape(id) + "/events",
	})
}

// cancelDocumented reports whether op's contract documents a cancel
// call, without which no cancel button is shown.
func (c *Console) cancelDocumented(op *pollwarden.Operation) bool {
	ex, ok := c.contractOf(op)
	return ok && ex.Spec().Cancel != nil
}

// decide applies an approver's choice through the use case, which
// decides what is allowed (an option not offered, a note too long): the
// console only shows its answer. Then it redirects to the page, which
// shows the new phase.
func (c *Console) decide(w http.ResponseWriter, r *http.Request) {
	v, ok := c.approverPost(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	option := r.PostFormValue("option")
	// The use case answers for the operation too: one that does not
	// exist, or that the caller may not see, is its NotFound.
	_, err := c.ops.Decide(r.Context(), operations.DecisionParams{Caller: operations.Caller{Caller: v.Caller}, ID: id,
		Option: option, Note: strings.TrimSpace(r.PostFormValue("note")), Escalation: r.PostFormValue("escalation")})
	if operations.KindOf(err) == operations.NotFound {
		c.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no operation %s.", clean(id)))
		return
	}
	if err != nil {
		status, msg := refusal(err)
		if status == http.StatusInternalServerError {
			c.log.ErrorContext(r.Context(), "console decision failed", "operation", id, "error", err)
		}
		c.showOperation(w, r, v, status, msg, "")
		return
	}
	http.Redirect(w, r, "/ui/operations/"+url.PathEscape(id)+"?decided="+url.QueryEscape(option), http.StatusSeeOther)
}

// refusal turns a use case's refusal into a status and a sentence.
func refusal(err error) (int, string) {
	p, ok := operations.AsProblems(err)
	if !ok {
		return http.StatusInternalServerError, "The decision could not be saved; see the daemon's log. Nothing was decided."
	}
	switch p.Kind {
	case operations.Invalid, operations.Unknown:
		return http.StatusUnprocessableEntity, "Refused: " + p.Error()
	case operations.Forbidden:
		return http.StatusForbidden, "Refused: " + p.Error()
	case operations.NotFound:
		return http.StatusNotFound, "The operation is gone."
	}
	return http.StatusConflict, "Refused: " + p.Error()
}

// approverPost checks a decision form's session and CSRF token (postBy)
// and that the viewer may decide (the table every use case asks, as the
// buttons were drawn): every decision form, an operation's or an
// incident's, answers a read-only viewer the same.
func (c *Console) approverPost(w http.ResponseWriter, r *http.Request) (viewer, bool) {
	v, ok := c.postBy(w, r)
	if !ok {
		return viewer{}, false
	}
	if !v.Decide {
		c.fail(w, r, http.StatusForbidden, fmt.Sprintf("%s signed in with an %s token, which is read-only here: only an approver decides.", clean(v.Actor.Name), v.Actor.Role))
		return viewer{}, false
	}
	return v, true
}
