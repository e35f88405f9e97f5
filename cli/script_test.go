package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden/cli"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/rogpeppe/go-internal/testscript"
)

// canary is the provider credential every script runs with. It must never
// show up in a store file, a command's output or anything else the
// scripts can see (R27).
const canary = "sk-canary-SCRIPT-9f3k"

// TestMain lets the test binary double as the pollwarden command, so that
// scripts run it as a real process (`exec pollwarden ...`), with its own
// working directory, environment and exit code.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"pollwarden": func() { os.Exit(cli.Main(context.Background(), os.Args[1:], cli.OSEnv())) },
	})
}

// scriptedJobs is the fixed set of jobs every script's provider knows.
// Jobs not listed here answer 404.
func scriptedJobs(srv *fp.Server) {
	running := fp.State("running", nil)
	// Three status requests: queued, running, then success with a URL.
	srv.Script("ok1", fp.State("queued", nil), running, fp.Succeeded("https://results.example.com/ok1.csv"))
	srv.Script("ok2", fp.State("queued", nil), running, fp.Succeeded("https://results.example.com/ok2.csv"))
	// Done at the first request: its audit has no wait between polls in
	// it, so its length does not depend on the machine's speed.
	srv.Script("ok-now", fp.Succeeded("https://results.example.com/ok-now.csv"))
	// Never finishes.
	srv.Script("slow", running)
	// A state the contract does not list.
	srv.Script("paused", running, fp.State("paused", nil))
	// The provider refuses the credential.
	srv.Script("denied", fp.Code(401, nil))
	// The provider's gateway keeps failing.
	srv.Script("flaky", fp.Code(502, nil))
	// The job does not exist (outside the contract's not_found window).
	srv.Script("gone", fp.Code(404, nil))
	// Busy once (Retry-After: 1 s), then done.
	srv.Script("ra", fp.Code(503, map[string]string{"Retry-After": "1"}), fp.Succeeded("https://results.example.com/ra.csv"))
	// Busy for longer than any script's deadline.
	srv.Script("ra-long", fp.Code(503, map[string]string{"Retry-After": "600"}), fp.Succeeded("https://results.example.com/ra.csv"))
	// The job fails with a provider error that must be kept.
	srv.Script("fails", running, fp.Failed("quota exceeded for export"))
	// The provider cancelled or expired the job.
	srv.Script("cancelled", running, fp.State("cancelled", nil))
	srv.Script("expired", running, fp.State("expired", nil))
	// Rate limited without Retry-After, again and again.
	srv.Script("limited", fp.Code(429, nil))
	// The first job a script submits (POST /jobs answers sub-1).
	srv.Script("sub-1", fp.State("queued", nil), fp.Succeeded("https://results.example.com/sub-1.csv"))
}

type serverKey struct{}

// TestScripts runs testdata/script/*.txtar. Each script gets its own fake
// provider (requiring the canary token) and these variables:
//
//	PROVIDER          the provider's base URL
//	ACC_TOKEN         the canary credential (the contracts use env:ACC_TOKEN)
//	POLLWARDEN_STORE  $WORK/pw.db
//	FIXTURES          contract/builtin/testdata, the built-ins' provider bodies
//
// Before the script runs, "$PROVIDER" in every *.yaml file of the archive
// is replaced by the provider's URL (testscript does not expand variables
// in files).
//
// Extra commands:
//
//	exitcode N prog [args...]  run prog; fail unless it exits with N. Its
//	                           stdout and stderr are kept for stdout/stderr
//	                           and appended to $WORK/transcript.log.
//	requests JOB N             the provider saw exactly N status requests for JOB
//	inflight JOB N             the provider never had more than N status
//	                           requests for JOB in flight at once
//	endsbefore DURATION        the outcome on the last stdout finished at
//	                           least DURATION before its deadline
//	gap JOB N DURATION         JOB's status request N (from 1) came at least
//	                           DURATION after request N-1
//	interrupted C JOB OP AGO   a wait on JOB under contract file C, as
//	                           operation OP, interrupted AGO ago after
//	                           its first status request
//	nocanary                   the canary appears in no file under $WORK and
//	                           not in the last stdout or stderr
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			srv := fp.New()
			env.Defer(srv.Close)
			srv.RequireToken(canary)
			scriptedJobs(srv)
			env.Values[serverKey{}] = srv
			env.Setenv("PROVIDER", srv.URL())
			env.Setenv("ACC_TOKEN", canary)
			env.Setenv("POLLWARDEN_STORE", filepath.Join(env.WorkDir, "pw.db"))
			fixtures, err := filepath.Abs(filepath.Join("..", "contract", "builtin", "testdata"))
			if err != nil {
				return err
			}
			env.Setenv("FIXTURES", fixtures)
			// Keep the CLI away from the real user's state directory.
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, ".state"))
			return expandProvider(env.WorkDir, srv.URL())
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":    cmdExitCode,
			"requests":    cmdRequests,
			"gap":         cmdGap,
			"inflight":    cmdInFlight,
			"endsbefore":  cmdEndsBefore,
			"nocanary":    cmdNoCanary,
			"interrupted": cmdInterrupted,
		},
	})
}

func expandProvider(dir, url string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(path, []byte(strings.ReplaceAll(string(b), "$PROVIDER", url)), 0o644)
	})
}

func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %q is not a number", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	stdout, stderr := ts.ReadFile("stdout"), ts.ReadFile("stderr")
	log := fmt.Sprintf("$ %s\n[exit %d]\n[stdout]\n%s[stderr]\n%s\n", strings.Join(args[1:], " "), got, stdout, stderr)
	f, err := os.OpenFile(filepath.Join(ts.Getenv("WORK"), "transcript.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	ts.Check(err)
	_, err = f.WriteString(log)
	ts.Check(errors.Join(err, f.Close()))
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

func cmdRequests(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: requests JOB N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	srv := ts.Value(serverKey{}).(*fp.Server)
	if got := srv.Count(args[0]); got != want {
		ts.Fatalf("provider saw %d status requests for job %s, want %d", got, args[0], want)
	}
}

// cmdEndsBefore checks the last stdout, an outcome as JSON: its
// finished_at is at least DURATION before its deadline_at.
func cmdEndsBefore(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: endsbefore DURATION")
	}
	margin, err := time.ParseDuration(args[0])
	ts.Check(err)
	var out struct {
		FinishedAt *time.Time `json:"finished_at"`
		DeadlineAt time.Time  `json:"deadline_at"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile("stdout")), &out))
	if out.FinishedAt == nil || out.DeadlineAt.Sub(*out.FinishedAt) < margin {
		ts.Fatalf("finished at %v, deadline %v: want it finished at least %v before", out.FinishedAt, out.DeadlineAt, margin)
	}
}

func cmdInFlight(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: inflight JOB N")
	}
	most, err := strconv.Atoi(args[1])
	ts.Check(err)
	if got := ts.Value(serverKey{}).(*fp.Server).MaxInFlight(args[0]); got > most {
		ts.Fatalf("job %s had %d status requests in flight at once, want at most %d", args[0], got, most)
	}
}

func cmdGap(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: gap JOB N DURATION")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	least, err := time.ParseDuration(args[2])
	ts.Check(err)
	reqs := ts.Value(serverKey{}).(*fp.Server).Requests(args[0])
	if n < 2 || n > len(reqs) {
		ts.Fatalf("job %s has %d requests; cannot measure the gap before request %d", args[0], len(reqs), n)
	}
	got := reqs[n-1].Time.Sub(reqs[n-2].Time)
	ts.Logf("gap before request %d of job %s: %v", n, args[0], got)
	if got < least {
		ts.Fatalf("request %d of job %s came %v after the previous one, want at least %v", n, args[0], got, least)
	}
}

func cmdNoCanary(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: nocanary")
	}
	for _, name := range []string{"stdout", "stderr"} {
		if strings.Contains(ts.ReadFile(name), canary) {
			ts.Fatalf("the credential's secret appears in %s", name)
		}
	}
	n := 0
	err := filepath.WalkDir(ts.Getenv("WORK"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		if strings.Contains(string(b), canary) {
			return fmt.Errorf("the credential's secret appears in %s", path)
		}
		return nil
	})
	ts.Check(err)
	ts.Logf("nocanary: %d files clean", n)
}
