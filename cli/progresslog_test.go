package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/cli"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestProgressLogSpeaksAtLeastEveryFiveMinutes: with stderr not a
// terminal, a wait that the provider holds off for 20 minutes (503 with
// Retry-After: 1200) still writes a line at least every 5 minutes, so a
// CI system's no-output timeout never fires. The clock jumps instead of
// waiting, and every gap is measured on the lines' own timestamps.
func TestProgressLogSpeaksAtLeastEveryFiveMinutes(t *testing.T) {
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(canary)
	srv.Script("held", fp.Code(503, map[string]string{"Retry-After": "1200"}), fp.Succeeded("https://results.example.com/held.csv"))
	dir := t.TempDir()
	c := fmt.Sprintf(`version: 1
name: held
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:ACC_TOKEN"}
  timeout: 2s
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: 1s, max: 30s}
limits: {deadline: 1h, max_status_requests: 5, max_transport_failures: 3, max_rate_limited: 3}
`, srv.URL())
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2031, 3, 4, 5, 0, 0, 0, time.UTC)
	var stdout, stderr bytes.Buffer
	env := cli.Env{Stdin: &bytes.Buffer{}, Stdout: &stdout, Stderr: &stderr, Clock: pollwarden.NewJumpClock(start),
		Getenv: func(k string) (string, bool) {
			if k == "ACC_TOKEN" {
				return canary, true
			}
			return "", false
		}}
	args := []string{"wait", "--contract", filepath.Join(dir, "c.yaml"), "--job-id", "held", "--operation-id", "op-held",
		"--store", filepath.Join(dir, "pw.db")}
	if code := cli.Main(context.Background(), args, env); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if n := srv.Count("held"); n != 2 {
		t.Fatalf("provider saw %d status requests, want 2 (the Retry-After is honoured)", n)
	}
	stamp := regexp.MustCompile(`^pollwarden: (\S+Z) op-held `)
	var times []time.Time
	still := 0
	for line := range strings.SplitSeq(strings.TrimSpace(stderr.String()), "\n") {
		m := stamp.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("stderr line %q is not a progress line", line)
		}
		at, err := time.Parse(time.RFC3339, m[1])
		if err != nil {
			t.Fatal(err)
		}
		times = append(times, at)
		if strings.Contains(line, " still waiting: state not yet observed, requests 1/5, transport failures 1/3, ") {
			still++
		}
	}
	t.Logf("stderr:\n%s", stderr.String())
	if end := times[len(times)-1]; end.Sub(start) < 20*time.Minute {
		t.Fatalf("the last line is at %v, want the wait to have lasted the 20 minutes of the Retry-After", end)
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap > 5*time.Minute {
			t.Errorf("lines %d and %d are %v apart, more than 5 minutes", i, i+1, gap)
		}
	}
	if still < 4 {
		t.Errorf("%d still-waiting lines over 20 silent minutes, want at least 4", still)
	}
	if !strings.Contains(stderr.String(), "next check at 2031-03-04T05:20:00Z") || !strings.Contains(stderr.String(), "provider guidance") {
		t.Errorf("no line says the next check is at the Retry-After's time and who chose it")
	}
}
