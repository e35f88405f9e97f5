package sim

import (
	"container/heap"
	"time"

	"github.com/pollwarden/pollwarden"
)

// answer is what the simulated provider said to one status request.
type answer uint8

const (
	ansRunning     answer = iota // 200, state running
	ansDone                      // 200, state succeeded, with a valid result
	ansUnavailable               // 503 with Retry-After (outage)
	ansLimited                   // 429 (rate limit), Retry-After if configured
)

// strategy is one way of scheduling status requests. The engine calls
// wake when an operation's timer fires; wake may send one request through
// e.send and returns the next wake-up time, or ok=false when the
// operation is finished (observed done, or stopped by a limit through
// e.stop).
type strategy interface {
	name() string
	init(e *engine)
	wake(e *engine, k int, now int64) (next int64, ok bool)
}

// callbackTaker is a strategy that acts on provider callbacks (the
// pollwarden strategies in the callback scenario): callback is called
// when operation k's callback arrives and returns the operation's new
// wake-up time when it moved it earlier.
type callbackTaker interface {
	takesCallbacks() bool
	callback(e *engine, k int, now int64) (next int64, moved bool)
}

// event is one pending wake-up. Each operation has at most one of its
// current generation, and at most one callback (gen < 0). A wake-up moved
// by a callback is pushed anew with the next generation; the old one is
// dropped when it comes up.
type event struct {
	at  int64
	op  int32
	gen int32
}

// callbackGen marks a callback's arrival in the event queue.
const callbackGen = -1

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].op < h[j].op
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }

// Pop drops the last element without boxing it: the engine only ever
// removes the top through heap.Pop and does not need the value back.
func (h *eventHeap) Pop() any { *h = (*h)[:len(*h)-1]; return nil }

// engine is one strategy's run: the clock, the event queue, its own copy
// of the provider and the counters it measures.
type engine struct {
	cfg *Config
	pop *population

	raUntil []int64 // per operation: no request before this (last Retry-After)
	bins    []int32 // requests per 1 s bin

	requests    int64
	violations  int64 // requests sent inside a Retry-After window
	unavailable int64 // 503 answers
	limited     int64 // 429 answers
	lags        []float64
	stopped     map[string]int

	limWindow   int64
	limAdmitted int

	// The fleet scenario's provider quota (Config.QuotaRequests):
	// admitted requests in the current fixed window, the Retry-After (s)
	// of the last 429, and the send times of the last QuotaRequests
	// requests (a ring) to count the requests over the quota in any
	// sliding window of QuotaPer.
	quotaWindow   int64
	quotaAdmitted int
	lastRA        int
	sent          []int64
	sentAt        int
	overQuota     int64
	// notifications counts what would reach a person: each escalation
	// and each incident opened; outageNotes those the outage caused
	// (provider_failure escalations and outage incidents); incidents the
	// incidents opened.
	notifications, outageNotes, incidents int64
}

func newEngine(cfg *Config, pop *population) *engine {
	n := len(pop.start)
	return &engine{
		cfg: cfg, pop: pop,
		raUntil:     make([]int64, n),
		bins:        make([]int32, 0, 4096),
		lags:        make([]float64, 0, n),
		stopped:     map[string]int{},
		limWindow:   -1,
		quotaWindow: -1,
	}
}

// run drives s over the whole population until every operation is done.
func (e *engine) run(s strategy) {
	s.init(e)
	n := len(e.pop.start)
	h := make(eventHeap, n, n+len(e.pop.callback))
	for k := range n {
		h[k] = event{at: e.pop.start[k], op: int32(k)}
	}
	cb, _ := s.(callbackTaker)
	var gen []int32
	if cb != nil && cb.takesCallbacks() && e.pop.callback != nil {
		gen = make([]int32, n)
		for k, at := range e.pop.callback {
			if at >= 0 {
				h = append(h, event{at: at, op: int32(k), gen: callbackGen})
			}
		}
	}
	heap.Init(&h)
	down0, down1 := int64(e.cfg.DownStart), int64(e.cfg.DownEnd)
	hasDown := down1 > down0
	for len(h) > 0 {
		ev := h[0]
		if gen != nil {
			switch {
			case ev.gen == callbackGen:
				heap.Pop(&h)
				// A callback sent while the controller is down is lost.
				if hasDown && ev.at >= down0 && ev.at < down1 {
					continue
				}
				if next, moved := cb.callback(e, int(ev.op), ev.at); moved {
					gen[ev.op]++
					heap.Push(&h, event{at: max(next, ev.at), op: ev.op, gen: gen[ev.op]})
				}
				continue
			case ev.gen != gen[ev.op]:
				heap.Pop(&h) // moved by a callback
				continue
			}
		}
		if hasDown && ev.at >= down0 && ev.at < down1 {
			// The controller is not running: the wake-up happens when it
			// comes back, with the operation overdue.
			h[0].at = down1
			heap.Fix(&h, 0)
			continue
		}
		next, ok := s.wake(e, int(ev.op), ev.at)
		if !ok {
			heap.Pop(&h)
			continue
		}
		if next < ev.at {
			next = ev.at
		}
		h[0].at = next
		heap.Fix(&h, 0)
	}
}

// send is one status request from operation k at now: it is counted, and
// the provider answers.
func (e *engine) send(k int, now int64) answer {
	b := int(now / int64(time.Second))
	for b >= len(e.bins) {
		e.bins = append(e.bins, 0)
	}
	e.bins[b]++
	e.requests++
	if now < e.raUntil[k] {
		e.violations++
	}
	c := e.cfg
	if c.QuotaRequests > 0 {
		e.countOverQuota(now)
	}
	if now >= int64(c.OutageStart) && now < int64(c.OutageEnd) {
		e.unavailable++
		e.raUntil[k] = now + int64(c.OutageRetryAfter)*int64(time.Second)
		return ansUnavailable
	}
	if c.RateLimit > 0 {
		w := now / int64(time.Second)
		if w != e.limWindow {
			e.limWindow, e.limAdmitted = w, 0
		}
		if e.limAdmitted >= c.RateLimit {
			e.limited++
			if c.RateLimitRetryAfter > 0 {
				e.raUntil[k] = now + int64(c.RateLimitRetryAfter)*int64(time.Second)
			}
			return ansLimited
		}
		e.limAdmitted++
	}
	if c.QuotaRequests > 0 {
		per := int64(c.QuotaPer)
		if w := now / per; w != e.quotaWindow {
			e.quotaWindow, e.quotaAdmitted = w, 0
		}
		if e.quotaAdmitted >= c.QuotaRequests {
			// Refused until the window resets, and the provider says so.
			reset := (e.quotaWindow + 1) * per
			e.limited++
			e.lastRA = int((reset - now + int64(time.Second) - 1) / int64(time.Second))
			e.raUntil[k] = now + int64(e.lastRA)*int64(time.Second)
			return ansLimited
		}
		e.quotaAdmitted++
	}
	if now >= e.pop.end[k] {
		e.lags = append(e.lags, float64(now-e.pop.end[k])/float64(time.Second))
		return ansDone
	}
	return ansRunning
}

// countOverQuota counts a request sent at now as over the quota when
// QuotaRequests others already went in the QuotaPer before it: what the
// provider sees in a sliding window, whatever it admitted.
func (e *engine) countOverQuota(now int64) {
	q := e.cfg.QuotaRequests
	if e.sent == nil {
		e.sent = make([]int64, q)
		for i := range e.sent {
			e.sent[i] = -1 << 62
		}
	}
	// The oldest of the last q sends: within the window, this one is
	// the (q+1)-th.
	if now-e.sent[e.sentAt] < int64(e.cfg.QuotaPer) {
		e.overQuota++
	}
	e.sent[e.sentAt] = now
	e.sentAt = (e.sentAt + 1) % q
}

// notify counts one notification to a person; outage marks one the
// outage caused, incident one that opened an incident.
func (e *engine) notify(outage, incident bool) {
	e.notifications++
	if outage {
		e.outageNotes++
	}
	if incident {
		e.incidents++
	}
}

// stop records that an operation ended on a limit (deadline or budget)
// without observing its job's end.
// Each is an escalation, so a notification to a person; a
// provider_failure one is the outage's doing.
func (e *engine) stop(reason string) {
	e.stopped[reason]++
	e.notify(reason == string(pollwarden.ReasonProviderFailure), false)
}
