package scheduler_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/postgres"
	"github.com/pollwarden/pollwarden/scheduler"
	"github.com/pollwarden/pollwarden/sqlite"
)

// fleetPoolConns caps each PostgreSQL store's pool: above the default
// (max(4, CPUs)) so that 32 steps in flight are not queued on the pool,
// and three replicas stay well under max_connections (100).
const fleetPoolConns = 16

// pgURL is the PostgreSQL database from POLLWARDEN_TEST_PG; the benchmark
// skips without it.
func pgURL(b testing.TB) string {
	b.Helper()
	url := os.Getenv("POLLWARDEN_TEST_PG")
	if url == "" {
		b.Skip("POLLWARDEN_TEST_PG is not set; set it to a PostgreSQL URL " +
			"(e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to benchmark the PostgreSQL driver")
	}
	return url
}

// pgSchema names a fresh schema, dropped with everything in it when the
// benchmark ends (after the stores it opened are closed: cleanups run in
// reverse).
func pgSchema(b testing.TB) string {
	b.Helper()
	url := pgURL(b)
	buf := make([]byte, 6)
	rand.Read(buf)
	schema := "pwbench_" + hex.EncodeToString(buf)
	b.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// pgStore opens a store (its own pool) in the schema.
func pgStore(b testing.TB, schema string) *postgres.Store {
	b.Helper()
	st, err := postgres.Open(context.Background(), pgURL(b), postgres.Options{Schema: schema, MaxConns: fleetPoolConns})
	if err != nil {
		b.Fatalf("postgres.Open: %v", err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// benchContract is the throughput benchmark's contract: always pending,
// 1 ms backoff, no budget to speak of, added to the rig's set.
func benchContract(b testing.TB, r *rig) *contract.Loaded {
	b.Helper()
	c := *r.compile("bench", "").Spec()
	c.Backoff.Base, c.Backoff.Max = time.Millisecond, time.Millisecond
	c.Limits.Deadline, c.Limits.MaxStatusRequests = 100000*time.Hour, 1<<30
	ex := mustCompile(b, &c)
	r.set.Put(ex)
	return ex
}

// submitOps creates ops never-ending operations in st (and scripts their
// jobs as running on the rig's provider).
func submitOps(b testing.TB, r *rig, st pollwarden.Store, ex *contract.Loaded, ops int) {
	b.Helper()
	setup := r.controller(st, "setup", nil)
	for i := range ops {
		job := fmt.Sprintf("job-%05d", i)
		r.srv.Script(job, fp.State("running", nil))
		if _, err := setup.Start(context.Background(), ex, policy.NewParams{ID: "op-" + job, ProviderJobID: job}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFleetThroughput: BenchmarkSchedulerThroughput's workload
// (operations that never end, always due, 1 ms backoff, catch-up pacing
// off, 32 steps in flight per scheduler) on SQLite (synchronous=FULL, the
// default, and NORMAL), on PostgreSQL with one scheduler, and on
// PostgreSQL with three schedulers in one process, each with its own store
// (its own pool), its own controller and owner, on one schema: three
// replicas. b.N is the number of status requests; the figure is durable
// status requests per second over all replicas.
func BenchmarkFleetThroughput(b *testing.B) {
	const ops, concurrency = 1000, 32
	b.Run("sqlite/synchronous=FULL", func(b *testing.B) { benchFleet(b, "sqlite", "FULL", 1, ops, concurrency) })
	b.Run("sqlite/synchronous=NORMAL", func(b *testing.B) { benchFleet(b, "sqlite", "NORMAL", 1, ops, concurrency) })
	b.Run("postgres/replicas=1", func(b *testing.B) { benchFleet(b, "postgres", "", 1, ops, concurrency) })
	b.Run("postgres/replicas=3", func(b *testing.B) { benchFleet(b, "postgres", "", 3, ops, concurrency) })
	// Steps claiming together (scheduler.Options.StartTogether), against
	// the rows above with each step claiming alone.
	b.Run("sqlite/synchronous=FULL/together=8", func(b *testing.B) { benchFleetWith(b, "sqlite", "FULL", 1, ops, concurrency, 8) })
	b.Run("postgres/replicas=1/together=8", func(b *testing.B) { benchFleetWith(b, "postgres", "", 1, ops, concurrency, 8) })
}

func benchFleet(b *testing.B, driver, sync string, replicas, ops, concurrency int) {
	benchFleetWith(b, driver, sync, replicas, ops, concurrency, 0)
}

func benchFleetWith(b *testing.B, driver, sync string, replicas, ops, concurrency, together int) {
	r := newRig(b)
	ex := benchContract(b, r)
	stores := make([]pollwarden.Store, replicas)
	switch driver {
	case "sqlite":
		submitOps(b, r, r.store, ex, ops)
		stores[0] = r.open(sqlite.Options{Synchronous: sync})
	case "postgres":
		schema := pgSchema(b)
		for i := range stores {
			stores[i] = pgStore(b, schema)
		}
		submitOps(b, r, stores[0], ex, ops)
	}
	var sent atomic.Int64
	r.srv.OnRequest(func(string) { sent.Add(1) })
	scheds := make([]*scheduler.Scheduler, replicas)
	for i, st := range stores {
		ctl := r.controller(st, fmt.Sprintf("replica-%d", i), nil)
		scheds[i] = scheduler.New(scheduler.Options{Controller: ctl, Store: st, Contracts: r.set, Clock: r.clock,
			Concurrency: concurrency, CatchUpRate: -1, StartTogether: together})
	}
	b.ResetTimer()
	cpu0 := processCPU(b)
	runs := make([]*running, replicas)
	for i, s := range scheds {
		runs[i] = start(s)
	}
	for sent.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	n := sent.Load()
	elapsed := b.Elapsed()
	cpu := processCPU(b) - cpu0
	for _, run := range runs {
		run.stop(b)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "req/s")
	// The figure that holds on a shared machine: the whole process's CPU
	// (schedulers, stores, the fake provider and, for SQLite, the
	// database itself; not a PostgreSQL server's) per status request.
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/req")
	b.ReportMetric(0, "ns/op")
	// How the first replica's writes shared transactions: its groups of
	// more than one write per request, and their size (Store.WriteGroups;
	// a write committed alone is in neither).
	type grouped interface{ WriteGroups() (int64, int64) }
	if g, ok := stores[0].(grouped); ok {
		groups, writes := g.WriteGroups()
		b.ReportMetric(float64(writes)/float64(max(groups, 1)), "writes/group")
		b.ReportMetric(float64(groups)/float64(n), "groups/req")
	}
}

// BenchmarkClaimLatency: the time of one claim, as a scheduler makes it —
// OperationList(DueBefore: now, Limit: 256) and then LeaseAcquire of one
// of the operations listed (chosen at random, so that concurrent claimers
// sometimes collide) — with 5,000 due operations, by 1 or 3 concurrent
// claimers, each with its own store (its own pool) on PostgreSQL, sharing
// the file on SQLite. The lease is released after each claim, outside the
// timed part, so that the due set stays the same. b.N is the number of
// claims over all claimers; reported: p50 and p99 of a claim in ms, claims
// per second, and the share of claims that lost the lease to another
// claimer.
func BenchmarkClaimLatency(b *testing.B) {
	for _, driver := range []string{"sqlite", "postgres"} {
		for _, claimers := range []int{1, 3} {
			b.Run(fmt.Sprintf("%s/claimers=%d", driver, claimers), func(b *testing.B) {
				benchClaim(b, driver, claimers)
			})
		}
	}
}

// leaseStore is a store that also takes a lease without a reservation, as
// both drivers do (pollwarden.Store itself no longer has LeaseAcquire).
type leaseStore interface {
	pollwarden.Store
	LeaseAcquire(ctx context.Context, p pollwarden.LeaseParams) (*pollwarden.Lease, error)
}

func benchClaim(b *testing.B, driver string, claimers int) {
	const ops, batch = 5000, scheduler.DefaultBatch
	r := newRig(b)
	ex := benchContract(b, r)
	stores := make([]leaseStore, claimers)
	switch driver {
	case "sqlite":
		submitOps(b, r, r.store, ex, ops)
		for i := range stores {
			stores[i] = r.open(sqlite.Options{})
		}
	case "postgres":
		schema := pgSchema(b)
		for i := range stores {
			stores[i] = pgStore(b, schema)
		}
		submitOps(b, r, stores[0], ex, ops)
	}
	time.Sleep(5 * time.Millisecond) // past the first 1 ms backoff: all due
	ctx := context.Background()
	per := max(1, b.N/claimers)
	durs := make([][]time.Duration, claimers)
	var conflicts atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	for i, st := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("claimer-%d", i)
			rnd := mrand.New(mrand.NewPCG(uint64(i), 11))
			d := make([]time.Duration, 0, per)
			for range per {
				t0 := time.Now()
				list, err := st.OperationList(ctx, pollwarden.ListParams{DueBefore: time.Now(), Limit: batch})
				if err != nil {
					failed.Store(err)
					return
				}
				if len(list) == 0 {
					failed.Store(errors.New("nothing due"))
					return
				}
				op := list[rnd.IntN(len(list))]
				l, err := st.LeaseAcquire(ctx, pollwarden.LeaseParams{OperationID: op.ID, Owner: owner, Now: time.Now(), TTL: time.Minute})
				d = append(d, time.Since(t0))
				switch {
				case errors.Is(err, pollwarden.ErrLeaseHeld):
					conflicts.Add(1)
				case err != nil:
					failed.Store(err)
					return
				default:
					if err := st.LeaseRelease(ctx, l); err != nil {
						failed.Store(err)
						return
					}
				}
			}
			durs[i] = d
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	all := slices.Concat(durs...)
	slices.Sort(all)
	q := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(len(all))/b.Elapsed().Seconds(), "claims/s")
	b.ReportMetric(float64(conflicts.Load())/float64(len(all)), "conflict-ratio")
	b.ReportMetric(0, "ns/op")
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
