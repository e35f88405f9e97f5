package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/cli"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// fixedClock is a wall clock set to another day: Now never moves, Sleep
// really sleeps (a wait that succeeds at once never sleeps).
type fixedClock struct {
	pollwarden.WallTimers
	at time.Time
}

func (c fixedClock) Now() time.Time { return c.at }
func (c fixedClock) Sleep(ctx context.Context, d time.Duration) error {
	return pollwarden.RealClock{}.Sleep(ctx, d)
}

// TestCommandsReadTheEnvClock: wait resolves a relative deadline, records
// its start and lists ages from Env.Clock, not from the wall clock, so a
// test (or an embedder) that passes a clock gets the times it set.
func TestCommandsReadTheEnvClock(t *testing.T) {
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("now", fp.Succeeded("https://results.example.com/now.csv"))
	dir := t.TempDir()
	c := fmt.Sprintf(`version: 1
name: clock
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:ACC_TOKEN"}
  timeout: 2s
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: 50ms, max: 200ms}
limits: {deadline: 2h, max_status_requests: 5, max_transport_failures: 3, max_rate_limited: 3}
`, srv.URL())
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	run := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		env := cli.Env{Stdin: &bytes.Buffer{}, Stdout: &stdout, Stderr: &stderr, Clock: fixedClock{at: at},
			Getenv: func(k string) (string, bool) {
				if k == "ACC_TOKEN" {
					return canary, true
				}
				return "", false
			}}
		if code := cli.Main(context.Background(), args, env); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		return stdout.String()
	}
	store := filepath.Join(dir, "pw.db")
	var out pollwarden.Outcome
	if err := json.Unmarshal([]byte(run("wait", "--contract", filepath.Join(dir, "c.yaml"), "--job-id", "now",
		"--deadline", "40m", "--store", store, "--json")), &out); err != nil {
		t.Fatal(err)
	}
	if !out.StartedAt.Equal(at) || !out.DeadlineAt.Equal(at.Add(40*time.Minute)) {
		t.Errorf("started %v, deadline %v; want %v and 40 minutes later", out.StartedAt, out.DeadlineAt, at)
	}
	if list := run("ops", "list", "--store", store); !strings.Contains(list, "2031-03-04T05:46:07Z") {
		t.Errorf("ops list does not show the deadline from the env clock:\n%s", list)
	}
	if pr := run("ops", "prune", "--older-than", "1h", "--dry-run", "--store", store); !strings.Contains(pr, "2031-03-04T04:06:07Z") {
		t.Errorf("ops prune does not cut an hour before the env clock:\n%s", pr)
	}
}
