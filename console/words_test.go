package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/present"
	"github.com/pollwarden/pollwarden/operations"
)

// TestViewSpeaksThePresentWords: the operation page says the last HTTP
// result and who chose the next poll in the words of the decision
// request, the webhooks, the CLI and MCP: a transport failure is "no
// answer at", never "HTTP 0", and a delay source is words, not its code.
func TestViewSpeaksThePresentWords(t *testing.T) {
	at := time.Date(2026, 4, 18, 10, 59, 0, 0, time.UTC)
	op := &pollwarden.Operation{ID: "op-1", Contract: "none-loaded", Phase: pollwarden.PhaseWaiting, StartedAt: at.Add(-time.Hour),
		DeadlineAt: at.Add(time.Hour), LastHTTPAt: &at, NextPollAt: at.Add(time.Minute), NextPollSource: pollwarden.DelayRetryAfter}
	r := newRig(t)
	c := New(Options{Ops: operations.New(operations.Options{Controller: r.ctl, Contracts: r.set}), Tokens: r.tokens})
	t.Cleanup(c.Close)
	v := c.view(op, nil, at)
	if v.LastHTTP != present.LastHTTP(op) || v.LastHTTP != "no answer at 10:59:00 UTC" {
		t.Errorf("last HTTP %q, want %q", v.LastHTTP, present.LastHTTP(op))
	}
	if want := "(" + present.DelaySource(pollwarden.DelayRetryAfter) + ")"; !strings.Contains(v.NextPoll, want) {
		t.Errorf("next poll %q, want %q", v.NextPoll, want)
	}
}

// TestDecideOnMissingOperationIsTheUseCasesAnswer: the console does not
// read the operation before the decision; the use case's NotFound is
// the page's 404, in the same words as the operation page's.
func TestDecideOnMissingOperationIsTheUseCasesAnswer(t *testing.T) {
	r := newRig(t)
	b := r.browser()
	csrf := b.signIn(approverToken)
	p := b.post("/ui/operations/no-such-op/decide", url.Values{"option": {"extend"}, "csrf": {csrf}})
	if p.status != http.StatusNotFound || !strings.Contains(p.body, "There is no operation no-such-op.") {
		t.Fatalf("decide on a missing operation: %d\n%s", p.status, p.body)
	}
}
