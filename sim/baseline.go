package sim

import (
	"math"
	"time"

	"github.com/pollwarden/pollwarden"
)

// The strategy names, fixed by the specification.
const (
	Pollwarden   = "pollwarden"
	Fixed10s     = "fixed-10s"
	FullJitter   = "full-jitter"
	EqualJitter  = "equal-jitter"
	SmithyWaiter = "smithy-waiter"
	K8sBackoff   = "k8s-backoff"
	// Proposed is the experimental strategy: the real policy plus the
	// change this package still only prototypes, jitter on top of
	// Retry-After (see proposed.go). It runs only when asked for by name.
	Proposed = "pollwarden-proposed"
)

// Standard lists the six strategies of the specification, in table order.
var Standard = []string{Pollwarden, Fixed10s, FullJitter, EqualJitter, SmithyWaiter, K8sBackoff}

// stepKind says what a baseline does after a delay.
type stepKind uint8

const (
	stepNormal stepKind = iota // poll after the delay unless it passes the deadline
	stepLast                   // Smithy's last attempt: poll at the deadline itself
	stepGiveUp                 // the waiter has no time left
)

// DelayFunc is a baseline's schedule: the i-th delay (i = 0 after the first
// poll), given the time left before the deadline and a uniform source.
type DelayFunc func(i int, remaining time.Duration, u func() float64) (time.Duration, stepKind)

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// rawDelay is the article's raw delay for baseline delay i:
// min(120, 5·2^(i+1)) seconds (its attempt = completed polls = i+1).
func rawDelay(i int) float64 {
	if i >= 5 {
		return 120
	}
	return math.Min(120, 5*math.Exp2(float64(i+1)))
}

// fixed10 polls every 10 s.
func fixed10(int, time.Duration, func() float64) (time.Duration, stepKind) {
	return 10 * time.Second, stepNormal
}

// fullJitter is U(0, raw(i)).
func fullJitter(i int, _ time.Duration, u func() float64) (time.Duration, stepKind) {
	return secs(u() * rawDelay(i)), stepNormal
}

// equalJitter is U(0.5, 1)·raw(i), the article's formula.
func equalJitter(i int, _ time.Duration, u func() float64) (time.Duration, stepKind) {
	return secs((0.5 + 0.5*u()) * rawDelay(i)), stepNormal
}

// Smithy waiter defaults (seconds).
const smithyMin, smithyMax = 2.0, 120.0

// smithyWaiter follows the Smithy waiters specification with minDelay 2 s
// and maxDelay 120 s, attempt = i+1:
//
//	attemptCeiling = log(max/min)/log(2) + 1
//	delay = max if attempt > attemptCeiling else min·2^(attempt−1)
//	delay = random(min, delay)
//	if remaining − delay <= min: delay = remaining   ("one last retry")
//
// The random draw is continuous, U(min, delay). With no time left the
// waiter gives up.
func smithyWaiter(i int, remaining time.Duration, u func() float64) (time.Duration, stepKind) {
	if remaining <= 0 {
		return 0, stepGiveUp
	}
	attempt := i + 1
	ceiling := math.Log(smithyMax/smithyMin)/math.Log(2) + 1
	hi := smithyMax
	if float64(attempt) <= ceiling {
		hi = math.Min(smithyMax, smithyMin*math.Exp2(float64(attempt-1)))
	}
	d := secs(smithyMin + u()*(hi-smithyMin))
	if remaining-d <= secs(smithyMin) {
		return remaining, stepLast
	}
	return d, stepNormal
}

// k8sBackoff is wait.Backoff{Duration: 5s, Factor: 2, Jitter: 0.1, Cap:
// 120s} without a step limit: sleep d(i) + U(0, 0.1·d(i)), d(0) = 5 s,
// d(i+1) = min(120, 2·d(i)).
func k8sBackoff(i int, _ time.Duration, u func() float64) (time.Duration, stepKind) {
	d := 120.0
	if i < 5 {
		d = math.Min(120, 5*math.Exp2(float64(i)))
	}
	return secs(d + u()*0.1*d), stepNormal
}

// baselineFuncs maps each baseline's name to its schedule.
var baselineFuncs = map[string]DelayFunc{
	Fixed10s:     fixed10,
	FullJitter:   fullJitter,
	EqualJitter:  equalJitter,
	SmithyWaiter: smithyWaiter,
	K8sBackoff:   k8sBackoff,
}

// Delay returns a baseline's schedule by name (for tests and docs).
func Delay(name string) (DelayFunc, bool) {
	f, ok := baselineFuncs[name]
	return f, ok
}

// baseline is a plain polling loop: poll, stop on done, else sleep the
// next delay. It knows nothing of Retry-After, 429 or 503: any answer
// other than done is "not yet". It stops at the deadline: a delay that
// would reach it ends the wait (Smithy instead makes its last attempt at
// the deadline).
type baseline struct {
	id    string
	delay DelayFunc
	seed  uint64
	i     []int32
	rngs  []rng
	cur   *rng
	u     func() float64
}

func newBaseline(name string, seed uint64) *baseline {
	b := &baseline{id: name, delay: baselineFuncs[name], seed: seed}
	b.u = func() float64 { return b.cur.Float64() }
	return b
}

func (b *baseline) name() string { return b.id }

func (b *baseline) init(e *engine) {
	n := len(e.pop.start)
	b.i = make([]int32, n)
	b.rngs = make([]rng, n)
	for k := range n {
		b.rngs[k] = newRNG(b.seed, b.id, k)
	}
}

func (b *baseline) wake(e *engine, k int, now int64) (int64, bool) {
	if e.send(k, now) == ansDone {
		return 0, false
	}
	dl := e.pop.deadline[k]
	b.cur = &b.rngs[k]
	d, kind := b.delay(int(b.i[k]), time.Duration(dl-now), b.u)
	b.i[k]++
	next := now + int64(d)
	switch {
	case kind == stepGiveUp, kind == stepNormal && next >= dl:
		e.stop(string(pollwarden.ReasonDeadlineExceeded))
		return 0, false
	}
	return next, true
}
