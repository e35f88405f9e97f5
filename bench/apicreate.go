package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// apiCreate measures operations created per second through `POST
// /v1/operations` on a SQLite daemon that is polling at the same time: a
// first set of operations is registered and left polling (the provider
// always answers running; backoff 5 s/120 s), then the measured creates
// are sent by several clients, each new operation polled at once as
// well. Each create is durable (record and first events committed)
// before its answer.
func apiCreate(ctx context.Context, c *config, w *bytes.Buffer) error {
	polling, n, clients := 2000, 4000, 16
	if c.full {
		polling, n = 10000, 20000
	}
	dir := filepath.Join(c.tmp, "create")
	if err := mkdirs(dir); err != nil {
		return err
	}
	prov, err := startProvider(answerRunning)
	if err != nil {
		return err
	}
	defer prov.close()
	served := &prov.served
	d, _, err := startDaemon(ctx, c, dir, filepath.Join(dir, "create.db"), benchContract("bench-create", prov.addr, "1h", 100))
	if err != nil {
		return err
	}
	defer d.stop()
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	create := func(prefix string, count int) (time.Duration, error) {
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Value
		t0 := time.Now()
		for range clients {
			wg.Go(func() {
				for {
					k := int(next.Add(1) - 1)
					if k >= count {
						return
					}
					id := prefix + strconv.Itoa(k)
					code, body, err := d.post(client, "/v1/operations", map[string]any{"operation_id": id, "contract": "bench-create", "job_id": id})
					if err == nil && code != http.StatusCreated && code != http.StatusOK {
						err = fmt.Errorf("create %s: HTTP %d %s", id, code, body)
					}
					if err != nil {
						failed.Store(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if e, _ := failed.Load().(error); e != nil {
			return 0, e
		}
		return time.Since(t0), nil
	}
	if _, err := create("poll-", polling); err != nil {
		return err
	}
	time.Sleep(3 * time.Second) // let the polling settle into its schedule
	before := served.Load()
	load := loadavg()
	ticks0 := d.cpuTicks()
	took, err := create("new-", n)
	if err != nil {
		return err
	}
	ticks := d.cpuTicks() - ticks0
	polled := served.Load() - before
	fmt.Fprintf(w, "### API create while polling (SQLite)\n\n")
	fmt.Fprintf(w, "`pollwarden serve` (SQLite, defaults) with %d operations polling a loopback provider that always answers running (backoff 5 s/120 s, so every 2.5–5 s at first); then %d operations created through `POST /v1/operations` by %d clients, each answered 201 once its record and first events are committed, and each polled at once too. Target: ≥ 4,000 creates/s.\n\n", polling, n, clients)
	// The daemon's CPU per create (its own polling included), in clock
	// ticks of 10 ms over the whole part: on a shared machine the rate
	// moves with the load, the CPU spent per create much less.
	cpu := "?"
	if ticks0 >= 0 && ticks >= 0 {
		cpu = fmt.Sprintf("%.0f µs", float64(ticks)*10e3/float64(n))
	}
	fmt.Fprintf(w, "| creates | took | creates/s | status requests sent meanwhile | of which per second | daemon CPU per create | load average at the start |\n|---|---|---|---|---|---|---|\n")
	rate := float64(n) / took.Seconds()
	fmt.Fprintf(w, "| %d | %s | %.0f | %d | %.0f | %s | %s |\n\n", n, took.Round(time.Millisecond), rate, polled, float64(polled)/took.Seconds(), cpu, load)
	c.target("API creates/s while polling, SQLite", fmt.Sprintf("%.0f", rate), "≥ 4,000", rate >= 4000, "go run ./bench -only create")
	return nil
}
