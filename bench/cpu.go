package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// CPU per step is the figure that holds on a shared machine: rates move
// with the load of other work, the CPU a step costs much less.

// selfCPU is the user and system CPU this process has used: River's
// client runs in it, and so do the bare HTTP clients and their provider.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// procTicks are the user and system CPU of process pid, in clock ticks,
// and its name; ok is false when it cannot be read.
func procTicks(pid int) (ticks int64, name string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return 0, "", false
	}
	// After the name: state is field 3 of the line; utime and stime are
	// 14 and 15 (proc(5)).
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return 0, "", false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, "", false
	}
	return u + st, s[open+1 : end], true
}

// postgresTicks are the CPU ticks of every visible process named postgres,
// by pid (empty when the server runs on another machine).
func postgresTicks() map[int]int64 {
	out := map[int]int64{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if t, name, ok := procTicks(pid); ok && name == "postgres" {
			out[pid] = t
		}
	}
	return out
}

// benchApp is the application_name of the bench's own PostgreSQL
// connections (the daemons' and River's), by which the server's backends
// serving them are told from those of whatever else shares the server.
func benchApp(part string) string { return fmt.Sprintf("pw_bench_%s_%d", part, os.Getpid()) }

// cpuSpan measures the CPU of this process, and of the PostgreSQL
// backends serving one application_name, over a span.
type cpuSpan struct {
	self time.Duration
	pg   map[int]int64
}

func startCPU() cpuSpan { return cpuSpan{self: selfCPU(), pg: postgresTicks()} }

// per is this process's CPU for each of n units of work since start.
func (c cpuSpan) per(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return (selfCPU() - c.self) / time.Duration(n)
}

// pgPer is the CPU for each of n units of work since start of the
// server's backends whose application_name is app (those still connected:
// a backend that began within the span counts from zero), read from /proc;
// 0 when the server is not on this machine. It excludes the server's
// shared processes (WAL writer, checkpointer), which other users of the
// shared server drive too.
func (c cpuSpan) pgPer(ctx context.Context, pgURL, app string, n int) time.Duration {
	if n <= 0 || len(c.pg) == 0 {
		return 0
	}
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return 0
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", app)
	if err != nil {
		return 0
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0
	}
	var ticks int64
	for _, pid := range pids {
		if t, _, ok := procTicks(int(pid)); ok {
			ticks += t - c.pg[int(pid)]
		}
	}
	return time.Duration(ticks) * clockTick / time.Duration(n)
}
