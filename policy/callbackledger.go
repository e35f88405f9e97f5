package policy

import (
	"container/heap"
	"time"

	"github.com/pollwarden/pollwarden"
)

// ledgerCap bounds each of a CallbackLedger's sets. An operation that
// never ends by a poll (escalated, cancelled, abandoned) would otherwise
// stay in them for ever; a full set is cleared, which only forgets
// evidence: arrivals forgotten count as silent ends (toward distrust),
// replaced times forgotten count an announced end at once.
const ledgerCap = 1 << 16

// CallbackLedger is what one process remembers of one contract's
// callbacks between the callback that names an operation and the poll
// that sees its job end, so that CallbackTrust is fed the way the
// simulation measured it: an announced end counted when the operation's
// own schedule would have polled, a silent one at once, a late callback
// turning a silent end into an announced one. It does no I/O and is not
// safe for concurrent use: the caller locks.
type CallbackLedger struct {
	trust CallbackTrust
	// arrived: operations named by a callback that did not move them (their
	// poll was due anyway); their end is announced.
	arrived map[string]struct{}
	// woken: operations a callback moved earlier, with the time their own
	// schedule had chosen (CallbackWake.Replaced).
	woken map[string]time.Time
	// silent: operations whose end a poll saw unannounced, in case their
	// callback comes late.
	silent map[string]struct{}
	// evidence: announced ends not counted yet, by the time they count.
	evidence timeHeap
}

// NewCallbackLedger starts untrusted, like CallbackTrust.
func NewCallbackLedger() *CallbackLedger {
	return &CallbackLedger{arrived: map[string]struct{}{}, woken: map[string]time.Time{}, silent: map[string]struct{}{}}
}

// Callback records a verified callback naming op: w is what
// policy.Callback answered for it (ignored when op is no longer waiting).
// A callback for an operation whose end was already counted silent is a
// late one (CallbackTrust.LateCallback).
func (l *CallbackLedger) Callback(op *pollwarden.Operation, w CallbackWake) {
	switch {
	case op.Phase != pollwarden.PhaseWaiting:
		if _, ok := l.silent[op.ID]; ok {
			delete(l.silent, op.ID)
			l.trust = l.trust.LateCallback()
		}
	case w.Woken:
		if _, again := l.woken[op.ID]; !again {
			put(l.woken, op.ID, w.Replaced)
		}
	default:
		put(l.arrived, op.ID, struct{}{})
	}
}

// Polled records the answer of one status request: reserved is the record
// as it was sent, decided the record after the answer. Only a job end the
// provider answered (succeeded or failed) is evidence; any other answer
// changes nothing.
func (l *CallbackLedger) Polled(reserved, decided *pollwarden.Operation, now time.Time) {
	if reserved.Phase != pollwarden.PhaseWaiting ||
		(decided.Phase != pollwarden.PhaseSucceeded && decided.Phase != pollwarden.PhaseFailed) {
		return
	}
	id := reserved.ID
	replaced, woken := l.woken[id]
	_, arrived := l.arrived[id]
	delete(l.woken, id)
	delete(l.arrived, id)
	switch {
	case woken && replaced.After(now):
		heap.Push(&l.evidence, replaced)
	case woken || arrived || reserved.NextPollSource == pollwarden.DelayCallback:
		// Woken by another process's callback: its replaced time is not
		// known here, so the end counts now.
		l.trust = l.trust.Observe(true)
	default:
		l.trust = l.trust.Observe(false)
		put(l.silent, id, struct{}{})
	}
}

// Trusted counts the announced ends due by now and reports whether the
// contract's callbacks are trusted (CallbackHold).
func (l *CallbackLedger) Trusted(now time.Time) bool {
	for len(l.evidence) > 0 && !l.evidence[0].After(now) {
		heap.Pop(&l.evidence)
		l.trust = l.trust.Observe(true)
	}
	return l.trust.Trusted()
}

// Hold is CallbackHold applied to a decided step: when the contract's
// callbacks are trusted, a pending answer's local-backoff poll becomes the
// safety net, and the step's events say so. The step is returned
// unchanged otherwise.
func (l *CallbackLedger) Hold(st Step, c *pollwarden.ContractSpec, now time.Time) Step {
	until, ok := CallbackHold(st.Op, c, now, l.Trusted(now))
	if !ok {
		return st
	}
	return holdStep(st, until, now)
}

// holdStep moves a decided step's next poll to the safety net at until.
func holdStep(st Step, until, now time.Time) Step {
	next := st.Op.Clone()
	next.NextPollAt = until
	t := until
	events := append([]pollwarden.Event(nil), st.Events...)
	for i := range events {
		if events[i].Kind == pollwarden.EventResponseReceived && events[i].Data.NextPollAt != nil {
			events[i].Data.NextPollAt = &t
		}
	}
	events = append(events, newEvent(next, now, pollwarden.EventNextCheckScheduled, pollwarden.EventData{
		NextPollAt: &t, DelaySource: next.NextPollSource,
		RequestsUsed: next.StatusRequestsUsed, MaxRequests: next.MaxStatusRequests,
		Detail: "the provider's callbacks are trusted: a safety-net poll at " + until.UTC().Format(time.RFC3339) +
			", sooner when the job's callback comes",
	}))
	return Step{Op: next, Events: events}
}

// HoldWaiting is CallbackHold for an operation about to be polled on a
// schedule chosen before the callbacks were trusted: ok is true when its
// poll waits for the safety net instead, with the record and event to save
// first (nothing is sent).
func (l *CallbackLedger) HoldWaiting(op *pollwarden.Operation, c *pollwarden.ContractSpec, now time.Time) (GateResult, bool) {
	until, ok := CallbackHold(op, c, now, l.Trusted(now))
	if !ok {
		return GateResult{}, false
	}
	st := holdStep(Step{Op: op}, until, now)
	return GateResult{Verdict: Wait, Until: until, Op: st.Op, Events: st.Events, Spread: true}, true
}

func put[V any](m map[string]V, k string, v V) {
	if len(m) >= ledgerCap {
		clear(m)
	}
	m[k] = v
}

// timeHeap is a min-heap of times.
type timeHeap []time.Time

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *timeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
