package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/cli"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// skewedClock is a replica's wall clock set off by d, as a machine whose
// clock has drifted: every time it reads (leases asked, escalations
// written, decisions judged) is off by d.
type skewedClock struct {
	pollwarden.RealClock
	d time.Duration
}

func (c skewedClock) Now() time.Time { return time.Now().Add(c.d) }

// skewedMain is main on a clock set off by skew (PW_TEST_CLOCK_SKEW, a
// Go duration), for the tests of replicas whose clocks disagree. Only the
// test binary has it: the pollwarden binary always runs on the wall clock.
func skewedMain(skew string) {
	d, err := time.ParseDuration(skew)
	if err != nil {
		fmt.Fprintf(os.Stderr, "PW_TEST_CLOCK_SKEW=%q: %v\n", skew, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := cli.OSEnv()
	env.Clock = skewedClock{d: d}
	code := cli.Main(ctx, os.Args[1:], env)
	stop()
	os.Exit(code)
}

// TestSkewedReplicaDoesNotExpireEarly is the attack of a replica whose
// clock runs two hours ahead on a PostgreSQL fleet: it judged a decision
// request written by another replica on its own clock, found it two hours
// old and applied on_expiry (abandon) at once, long before the approver's
// hour was up. Judged on the database's clock, the request is seconds old:
// the skewed replica sends the first reminder when it falls due, and
// nothing expires.
func TestSkewedReplicaDoesNotExpireEarly(t *testing.T) {
	t.Parallel()
	store := pgStore(t)
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("esc-job", fp.State("running", nil))
	c := strings.Replace(procContract(srv.URL()), "limits: {deadline: 60s, max_status_requests: 3,",
		"escalation: {extension: {time: 15m, status_requests: 4}, remind_after: 2s, expire_after: 1h}\nlimits: {deadline: 60s, max_status_requests: 1,", 1)
	if !strings.Contains(c, "expire_after") {
		t.Fatal("the escalation block was not added")
	}
	_, cdir, tokens := servedDir(t, c)
	args := []string{"serve", "--listen", "127.0.0.1:0", "--store", store, "--contracts", cdir, "--tokens", tokens, "--lease-slack", testLeaseSlack}

	// Replica A, on the right time, polls the job into an escalation and
	// stops before its first reminder is due.
	a := start(t, args...)
	defer a.cmd.Process.Kill()
	base := listenAddr(t, a)
	call(t, base, "agent-token", "POST", "/v1/operations", `{"operation_id":"esc","contract":"proc-test","job_id":"esc-job"}`, 201)
	if op := waitPhase(t, base, "esc", "escalated"); op["reason"] != "request_budget_exhausted" {
		t.Fatalf("escalated for %v", op["reason"])
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := a.exitCode(t); code != 0 {
		t.Fatalf("replica A exited %d: %s", code, a.stderr.String())
	}
	escalatedAt := time.Now()

	// Replica B runs two hours ahead, alone with the request.
	b := startEnv(t, []string{"PW_TEST_CLOCK_SKEW=2h"}, args...)
	defer b.cmd.Process.Kill()
	base = listenAddr(t, b)
	var audit string
	waitFor(t, "the skewed replica's first reminder or expiry", func() bool {
		audit = string(get(t, base, "alice-token", "/v1/operations/esc/audit", "text/plain"))
		return strings.Contains(audit, "reminder 1:") || strings.Contains(audit, "expired")
	})
	op := call(t, base, "alice-token", "GET", "/v1/operations/esc", "", 200)
	if op["phase"] != "escalated" || strings.Contains(audit, "expired") {
		t.Fatalf("the decision request expired %s after it was made, an hour early: phase %v\n%s",
			time.Since(escalatedAt).Round(time.Second), op["phase"], audit)
	}
	if strings.Contains(audit, "reminder 2:") || !strings.Contains(audit, "reminder 1: decision request waiting for") {
		t.Fatalf("want reminder 1 first:\n%s", audit)
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := b.exitCode(t); code != 0 {
		t.Fatalf("replica B exited %d: %s", code, b.stderr.String())
	}
}
