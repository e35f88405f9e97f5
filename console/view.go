package console

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/internal/present"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/tokens"
)

// opView is what a page shows of one operation. Every string that came
// from a provider or an agent has been through clean.
type opView struct {
	ID, Contract, Job, Phase, Reason, State string
	Age                                     string
	Started, Deadline                       time.Time
	DeadlineIn                              string
	Budgets                                 []budget
	LastHTTP                                string
	NextPoll                                string
	Message                                 string
	Options                                 []pollwarden.Option
	ConsoleURL                              string
	// NoPoller says, for an operation nothing polls any more
	// (operations.NoPoller), how long ago its next check was due.
	NoPoller string
	// Priority is the operation's place under a shared quota, 1 to 9.
	Priority int
	// Escalation is the id of the open question, carried by the decision
	// form so that a stale or repeated post decides nothing.
	Escalation string
	// LastDecision says who decided what, and when.
	LastDecision          string
	Requests              []extensionRequest
	Result, ProviderError string
	Version               int64
}

// budget is one limit drawn as a bar: used of limit.
type budget struct {
	Name, Unit  string
	Used, Limit int
	// Low and High colour the bar (a <meter>): amber above three
	// quarters, red above nine tenths.
	Low, High int
	Text      string
	Exhausted bool
}

// extensionRequest is an agent's pending request for more (an audit
// event: the request grants nothing until an approver decides).
type extensionRequest struct {
	By, Detail string
	At         time.Time
}

func newBudget(name, unit string, used, limit int) budget {
	return budget{Name: name, Unit: unit, Used: used, Limit: limit, Low: limit * 3 / 4, High: limit * 9 / 10,
		Text: fmt.Sprintf("%d of %d %s", used, limit, unit), Exhausted: limit > 0 && used >= limit}
}

// view builds the page view of op at now; events, when given, add the
// pending extension requests.
func (c *Console) view(op *pollwarden.Operation, events []pollwarden.Event, now time.Time) opView {
	v := opView{ID: op.ID, Contract: clean(op.Contract), Job: clean(op.ProviderJobID), Phase: string(op.Phase),
		Reason: string(op.Reason), State: clean(op.LastState), Started: op.StartedAt, Deadline: op.DeadlineAt,
		Version: op.Version, Priority: op.EffectivePriority()}
	since := op.StartedAt
	if op.Escalation != nil {
		since = op.Escalation.At
		v.Message = clean(op.Escalation.Message)
		v.Escalation = clean(op.Escalation.ID)
		for _, o := range op.Escalation.Options {
			o.Label = clean(o.Label)
			v.Options = append(v.Options, o)
		}
	}
	if op.LastDecision != nil {
		v.LastDecision = clean(policy.DecisionText(op.LastDecision))
	}
	v.Age = age(now.Sub(since))
	if late, ok := operations.NoPoller(op, now); ok {
		v.NoPoller = "nothing is polling it: its next check was due " + age(late) + " ago"
	}
	if op.Phase == pollwarden.PhaseWaiting {
		v.DeadlineIn = "in " + age(op.DeadlineAt.Sub(now))
		if !op.DeadlineAt.After(now) {
			v.DeadlineIn = "passed"
		}
		v.NextPoll = fmt.Sprintf("%s (%s)", clock(op.NextPollAt), present.DelaySource(op.NextPollSource))
	}
	v.Budgets = []budget{
		newBudget("Status requests", "requests", op.StatusRequestsUsed, op.MaxStatusRequests),
		newBudget("Transport failures", "failures", op.TransportFailuresUsed, op.MaxTransportFailures),
		newBudget("Rate-limited answers", "answers", op.RateLimitedUsed, op.MaxRateLimited),
	}
	total := op.DeadlineAt.Sub(op.StartedAt)
	used := now.Sub(op.StartedAt)
	if op.FinishedAt != nil {
		used = op.FinishedAt.Sub(op.StartedAt)
	}
	tb := newBudget("Time", "seconds", int(min(used, total).Seconds()), int(total.Seconds()))
	tb.Text = fmt.Sprintf("%s of %s", age(min(used, total)), age(total))
	v.Budgets = append(v.Budgets, tb)
	// The same words as the decision request and the webhooks; a
	// transport failure reads "no answer at", never "HTTP 0".
	v.LastHTTP = present.LastHTTP(op)
	if op.LastHTTPAt != nil && op.LastRequestID != "" {
		v.LastHTTP += ", provider request " + clean(op.LastRequestID)
	}
	v.Result, v.ProviderError = pretty(op.Result), pretty(op.ProviderError)
	if ex, ok := c.contractOf(op); ok && ex.Spec().Escalation.ConsoleURL != "" {
		if u, ok := present.ConsoleLink(ex.Spec().Escalation.ConsoleURL, op); ok {
			v.ConsoleURL = u
		}
	}
	v.Requests = pendingRequests(events)
	return v
}

// pendingRequests are the extension requests made since the last
// decision: the ones nobody has answered yet.
func pendingRequests(events []pollwarden.Event) []extensionRequest {
	var out []extensionRequest
	for _, e := range events {
		switch e.Kind {
		case pollwarden.EventDecision:
			out = nil
		case pollwarden.EventExtensionRequested:
			by := "an agent"
			if e.Data.Actor != nil {
				by = clean(e.Data.Actor.Name)
			}
			out = append(out, extensionRequest{By: by, Detail: clean(e.Data.Detail), At: e.At})
		}
	}
	return out
}

// pretty indents a provider's JSON for reading; empty stays empty.
func pretty(b json.RawMessage) string {
	if len(b) == 0 || string(b) == "null" {
		return ""
	}
	out, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return clean(string(b))
	}
	return clean(string(out))
}

// story is the operation's audit trail as lines for a person (R26).
func (c *Console) story(events []pollwarden.Event) []string {
	lines := audit.Story(events, time.UTC)
	for i := range lines {
		lines[i] = clean(lines[i])
	}
	return lines
}

// visible reads op id for who through the use case: a store miss and an
// operation who may not see are the same not-found refusal, so a page
// reveals nothing either way.
func (c *Console) visible(ctx context.Context, who tokens.Caller, id string) (*pollwarden.Operation, error) {
	return c.ops.Get(ctx, operations.Caller{Caller: who}, id)
}
