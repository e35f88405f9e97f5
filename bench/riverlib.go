package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// River is linked into this program only: the bench runs River's own
// library (its CLI is a module the proxy here does not serve), and the
// pollwarden binary must never link it (deps_test.go checks).

// noopArgs is River's job: it does nothing, so River's figure is its
// queue's own cost (insert, fetch, lock, complete).
type noopArgs struct{}

func (noopArgs) Kind() string { return "pollwarden_bench_noop" }

// noopWorker counts each job worked and remembers when the last one was.
type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	worked *atomic.Int64
	last   *atomic.Int64
}

func (w *noopWorker) Work(context.Context, *river.Job[noopArgs]) error {
	w.worked.Add(1)
	w.last.Store(time.Now().UnixNano())
	return nil
}

// riverResult is one River burn-down: the time from the client's start to
// the last job worked, and to the client's stop, by which River has
// written every completion.
type riverResult struct {
	worked, stopped time.Duration
	// cpu is River's CPU per job (this process's, where its client runs),
	// pg the PostgreSQL server's, from the client's start to its stop.
	cpu, pg time.Duration
}

// riverBurnDown inserts n no-op jobs into a fresh River schema, then starts
// a client with workers workers and waits until all are worked. kind is
// "postgres" (riverpgxv5 in a throwaway schema of pgURL's database) or
// "sqlite" (riversqlite on a fresh file under dir).
func riverBurnDown(ctx context.Context, kind, pgURL, dir string, n, workers int) (riverResult, error) {
	switch kind {
	case "postgres":
		schema := fmt.Sprintf("pw_river_bench_%d", os.Getpid())
		defer dropSchema(pgURL, schema)
		cfg, err := pxpoolConfig(pgURL, schema, workers)
		if err != nil {
			return riverResult{}, err
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return riverResult{}, err
		}
		defer pool.Close()
		if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema); err != nil {
			return riverResult{}, err
		}
		return runRiver(ctx, riverpgxv5.New(pool), schema, false, n, workers, pgURL)
	case "sqlite":
		if err := mkdirs(dir); err != nil {
			return riverResult{}, err
		}
		path := filepath.Join(dir, "river.db")
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)")
		if err != nil {
			return riverResult{}, err
		}
		defer db.Close()
		// riversqlite's advice: SQLite allows one writer, so one connection.
		db.SetMaxOpenConns(1)
		return runRiver(ctx, riversqlite.New(db), "", true, n, workers, "")
	}
	return riverResult{}, fmt.Errorf("no River driver for %q", kind)
}

func pxpoolConfig(pgURL, schema string, workers int) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(pgURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(workers/2 + 4)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = benchApp("river")
	return cfg, nil
}

// runRiver works n jobs with drv; pgURL, when set, is the server whose
// backends' CPU is measured (see cpuSpan.pgPer).
func runRiver[TTx any](ctx context.Context, drv riverdriver.Driver[TTx], schema string, pollOnly bool, n, workers int, pgURL string) (riverResult, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mig, err := rivermigrate.New(drv, &rivermigrate.Config{Schema: schema, Logger: quiet})
	if err != nil {
		return riverResult{}, err
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return riverResult{}, fmt.Errorf("river migrate: %w", err)
	}
	var worked, last atomic.Int64
	ws := river.NewWorkers()
	river.AddWorker(ws, &noopWorker{worked: &worked, last: &last})
	client, err := river.NewClient(drv, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
		Schema:            schema,
		FetchCooldown:     time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond,
		PollOnly:          pollOnly,
		Logger:            quiet,
	})
	if err != nil {
		return riverResult{}, err
	}
	const chunk = 1000
	for i := 0; i < n; i += chunk {
		params := make([]river.InsertManyParams, min(chunk, n-i))
		for k := range params {
			params[k] = river.InsertManyParams{Args: noopArgs{}}
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return riverResult{}, fmt.Errorf("river insert: %w", err)
		}
	}
	span := startCPU()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return riverResult{}, err
	}
	for worked.Load() < int64(n) {
		if time.Since(start) > 30*time.Minute {
			client.Stop(ctx)
			return riverResult{}, fmt.Errorf("River worked only %d of %d jobs in 30 minutes", worked.Load(), n)
		}
		select {
		case <-ctx.Done():
			return riverResult{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := client.Stop(ctx); err != nil {
		return riverResult{}, err
	}
	stopped := time.Since(start)
	cpu := span.per(n)
	var pg time.Duration
	if pgURL != "" {
		pg = span.pgPer(ctx, pgURL, benchApp("river"), n)
	}
	return riverResult{worked: time.Duration(last.Load() - start.UnixNano()), stopped: stopped, cpu: cpu, pg: pg}, nil
}
