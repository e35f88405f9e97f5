package storetest

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// benchBatch is how many claims BenchClaims makes together: the
// scheduler's default concurrency, the most one walk can start.
const benchBatch = 32

// BenchClaims measures the CPU a claim costs this process (for SQLite,
// the database's work too; not a PostgreSQL server's), as cpu-µs/claim,
// claims being made one at a time (alone: a group of one each), by
// benchBatch goroutines at once, round by round (concurrent: groups as
// they form), or
// benchBatch in one OperationClaimMany (many), each without and with a
// quota key (the key row's lock, read and write). Every operation is
// claimed in turn, at the instant its last lease expires, so no release
// is needed between claims. open returns a new, empty store whose leases
// follow the caller's clock.
func BenchClaims(b *testing.B, open func(b *testing.B) pollwarden.Store) {
	for _, keyed := range []bool{false, true} {
		for _, mode := range []string{"alone", "concurrent", "many"} {
			b.Run(fmt.Sprintf("%s/key=%v", mode, keyed), func(b *testing.B) {
				s := open(b)
				b.Cleanup(func() { s.Close() })
				benchClaims(b, s, mode, keyed)
			})
		}
	}
}

func benchClaims(b *testing.B, s pollwarden.Store, mode string, keyed bool) {
	ctx := context.Background()
	ops := make([]string, benchBatch)
	for i := range ops {
		ops[i] = fmt.Sprintf("op-%02d", i)
		op := newOp(ops[i])
		if err := s.OperationCreate(ctx, op, []pollwarden.Event{{At: op.StartedAt, Kind: pollwarden.EventSubmitted}}); err != nil {
			b.Fatal(err)
		}
	}
	c := quotaContract(1<<30, time.Hour)
	// The k-th claim of operation i is made at t0 + k×ttl + i ms, when
	// its (k-1)-th lease has just expired (the milliseconds keep the
	// key's spacing of requests from holding any).
	params := func(i, k int) pollwarden.ClaimParams {
		id := ops[i]
		now := at(time.Duration(k)*ttl + time.Duration(i)*time.Millisecond)
		if keyed {
			return quotaParams(c, id, "bench", now)
		}
		return pollwarden.ClaimParams{OperationID: id, Owner: "bench", Now: now, TTL: ttl, Change: reserve(now, nil)}
	}
	// A keyed claim made before one of a later instant (goroutines race
	// within a round) is held by the key: it still locks, reads and
	// writes the key's row, and writes the wait instead of a lease.
	var mu sync.Mutex
	held := 0
	check := func(err error, l *pollwarden.Lease) {
		switch {
		case err != nil:
			b.Errorf("claim: %v", err)
		case l == nil && keyed:
			mu.Lock()
			held++
			mu.Unlock()
		case l == nil:
			b.Errorf("claim took no lease")
		}
	}
	rounds := (b.N + benchBatch - 1) / benchBatch
	b.ResetTimer()
	cpu0 := processCPU(b)
	switch mode {
	case "alone":
		for k := range rounds {
			for i := range ops {
				_, l, err := s.OperationClaim(ctx, params(i, k))
				check(err, l)
			}
		}
	case "concurrent":
		// Round by round, so that the key's clock only moves on.
		for k := range rounds {
			var wg sync.WaitGroup
			for i := range ops {
				wg.Go(func() {
					_, l, err := s.OperationClaim(ctx, params(i, k))
					check(err, l)
				})
			}
			wg.Wait()
		}
	case "many":
		mc, ok := s.(pollwarden.ManyClaimer)
		if !ok {
			b.Skip("the store does not implement pollwarden.ManyClaimer")
		}
		ps := make([]pollwarden.ClaimParams, len(ops))
		for k := range rounds {
			for i := range ops {
				ps[i] = params(i, k)
			}
			for _, r := range mc.OperationClaimMany(ctx, ps) {
				check(r.Err, r.Lease)
			}
		}
	}
	cpu := processCPU(b) - cpu0
	b.StopTimer()
	n := rounds * benchBatch
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/claim")
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "claims/s")
	b.ReportMetric(float64(held)/float64(n), "held-ratio")
	b.ReportMetric(0, "ns/op")
}

// processCPU is the CPU time this process used so far.
func processCPU(b testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
