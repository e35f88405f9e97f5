package sim

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/policy"
)

// Brooker's contention model, reimplemented from the description in
// perf-anchors.md §1.3 (Marc Brooker, "Exponential Backoff And Jitter",
// AWS Architecture Blog, 2015, and its simulator
// aws-samples/aws-arch-backoff-simulator):
//
//   - one server holds a row with an integer version; every message costs
//     one network hop of |Normal(10 ms, sd 2 ms)|;
//   - each of N clients starts at t = 0: read (one hop there, one back),
//     then write with the version it read (one hop there, one back); the
//     write succeeds only if the version is unchanged, which increments it;
//   - after a failed write the client sets attempt += 1 and sends a new
//     read after one hop plus backoff(attempt); after a success it stops;
//   - base 5 ms, cap 2000 ms, expo(n) = min(cap, base·2^n);
//   - calls = writes (successful or not); time = the simulated time of the
//     last event. Both are averaged over independent runs.

// The Brooker variants: the published controls, plus the project's own
// delay function driven through package policy.
const (
	BrookerNone         = "none"
	BrookerExponential  = "exponential"
	BrookerEqualJitter  = "equal-jitter"
	BrookerFullJitter   = "full-jitter"
	BrookerDecorrelated = "decorrelated"
	BrookerPollwarden   = "pollwarden"
)

// BrookerVariants lists the variants in table order.
var BrookerVariants = []string{BrookerNone, BrookerExponential, BrookerEqualJitter, BrookerFullJitter, BrookerDecorrelated, BrookerPollwarden}

// BrookerReference is the table of perf-anchors.md §1.4 (the published
// simulator rerun with 100 runs per cell): mean write calls and mean
// completion time (ms) per run, by N and variant.
var BrookerReference = map[int]map[string][2]float64{
	50: {
		BrookerNone: {690, 1139}, BrookerExponential: {625, 36971}, BrookerEqualJitter: {347, 4238},
		BrookerFullJitter: {332, 2898}, BrookerDecorrelated: {375, 2235},
	},
	100: {
		BrookerNone: {2423, 2034}, BrookerExponential: {1857, 63718}, BrookerEqualJitter: {811, 6553},
		BrookerFullJitter: {796, 4915}, BrookerDecorrelated: {999, 4568},
	},
	190: {
		BrookerNone: {7998, 3536}, BrookerExponential: {5153, 100909}, BrookerEqualJitter: {1760, 9406},
		BrookerFullJitter: {1771, 7533}, BrookerDecorrelated: {2445, 7910},
	},
}

// BrookerResult is the mean over runs of one cell.
type BrookerResult struct {
	Variant string  `json:"variant"`
	Clients int     `json:"clients"`
	Runs    int     `json:"runs"`
	Calls   float64 `json:"calls"`
	TimeMs  float64 `json:"time_ms"`
}

const (
	brookerBase = 5.0    // ms
	brookerCap  = 2000.0 // ms
)

type occKind uint8

const (
	occRead     occKind = iota // at the server
	occReadRsp                 // at the client, payload = version read
	occWrite                   // at the server, payload = version to write
	occWriteRsp                // at the client, payload = 1 on success
)

type occMsg struct {
	at      float64 // ms
	seq     int64
	kind    occKind
	client  int32
	payload int64
}

type occQueue []occMsg

func (q occQueue) Len() int { return len(q) }
func (q occQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q occQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *occQueue) Push(x any)   { *q = append(*q, x.(occMsg)) }

// Pop drops the last element without boxing it (see eventHeap.Pop).
func (q *occQueue) Pop() any { *q = (*q)[:len(*q)-1]; return nil }

// brookerBackoff returns the variant's backoff in ms for attempt n (≥ 1);
// sleep is the decorrelated variant's per-client state.
func brookerBackoff(variant string, n int, sleep *float64, r *rand.Rand) float64 {
	expo := func(n int) float64 { return math.Min(brookerCap, math.Exp2(float64(n))*brookerBase) }
	switch variant {
	case BrookerExponential:
		return expo(n)
	case BrookerEqualJitter:
		v := expo(n)
		return v/2 + r.Float64()*(v/2)
	case BrookerFullJitter:
		return r.Float64() * expo(n)
	case BrookerDecorrelated:
		lo, hi := brookerBase, *sleep*3
		*sleep = math.Min(brookerCap, lo+r.Float64()*(hi-lo))
		return *sleep
	case BrookerPollwarden:
		// The project's R5 schedule through package policy: raw =
		// min(max, base·2^attempt) with attempt = completed polls (here
		// the failed writes, as in the model), then U(0.5, 1)·raw.
		b := pollwarden.Backoff{Base: 5 * time.Millisecond, Max: 2 * time.Second}
		d := policy.Jitter(policy.RawDelay(b, n), r)
		return float64(d) / float64(time.Millisecond)
	}
	return 0
}

// Brooker runs the contention model for one variant with the given number
// of clients, averaged over runs independent runs (each seeded from seed
// and its index).
func Brooker(variant string, clients, runs int, seed uint64) (BrookerResult, error) {
	known := false
	for _, v := range BrookerVariants {
		known = known || v == variant
	}
	if !known {
		return BrookerResult{}, fmt.Errorf("unknown Brooker variant %q", variant)
	}
	if clients < 1 || runs < 1 {
		return BrookerResult{}, fmt.Errorf("clients and runs must be positive")
	}
	var calls int64
	var total float64
	q := make(occQueue, 0, clients*2)
	attempt := make([]int, clients)
	sleep := make([]float64, clients)
	for run := range runs {
		r := rand.New(rand.NewPCG(seed, uint64(run)))
		hop := func() float64 { return math.Abs(10 + 2*r.NormFloat64()) }
		q = q[:0]
		var seq int64
		push := func(m occMsg) {
			m.seq = seq
			seq++
			q = append(q, m) // heap.Push without boxing m
			heap.Fix(&q, len(q)-1)
		}
		for c := range clients {
			attempt[c], sleep[c] = 0, brookerBase
			push(occMsg{at: hop(), kind: occRead, client: int32(c)})
		}
		version := int64(0)
		now := 0.0
		for q.Len() > 0 {
			m := q[0]
			heap.Pop(&q)
			now = m.at
			switch m.kind {
			case occRead:
				push(occMsg{at: now + hop(), kind: occReadRsp, client: m.client, payload: version})
			case occReadRsp:
				push(occMsg{at: now + hop(), kind: occWrite, client: m.client, payload: m.payload})
			case occWrite:
				calls++
				ok := int64(0)
				if m.payload == version {
					version++
					ok = 1
				}
				push(occMsg{at: now + hop(), kind: occWriteRsp, client: m.client, payload: ok})
			case occWriteRsp:
				if m.payload == 0 {
					c := m.client
					attempt[c]++
					push(occMsg{at: now + hop() + brookerBackoff(variant, attempt[c], &sleep[c], r), kind: occRead, client: c})
				}
			}
		}
		total += now
	}
	return BrookerResult{Variant: variant, Clients: clients, Runs: runs,
		Calls: float64(calls) / float64(runs), TimeMs: total / float64(runs)}, nil
}
