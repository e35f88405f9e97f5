package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/controller"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/spf13/cobra"
)

// demoContract is a real contract file, run against the in-process fake
// provider with short delays so the whole demo takes a few seconds.
const demoContract = `version: 1
name: demo-export
status:
  url: "%s/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:DEMO_PROVIDER_TOKEN"}
  timeout: 2s
state:
  path: state
  pending: [queued, running]
  success: [succeeded]
  failure: [failed]
  cancelled: [cancelled]
  expired: [expired]
result:
  require: [{path: result.url, kind: url}]
  error_path: error
hints: {poll_after_seconds: poll_after_seconds, next_check_at: next_check_at, job_expires_at: expires_at}
backoff: {base: 200ms, max: 2s}
limits: {deadline: 1m, max_status_requests: 8, max_transport_failures: 3, max_rate_limited: 3}
escalation:
  extension: {time: 15m, status_requests: 4}
  console_url: "https://console.example.com/jobs/{job_id}"
`

type demoCase struct {
	title       string
	job         string
	steps       []fp.Step
	maxRequests int
}

func demoCases() []demoCase {
	running := fp.State("running", nil)
	return []demoCase{
		{"success after a few polls", "exp_success", []fp.Step{fp.State("queued", nil), running, running, fp.Succeeded("https://results.example.com/exp_success.csv")}, 0},
		{"Retry-After honoured", "exp_retry_after", []fp.Step{fp.Code(503, map[string]string{"Retry-After": "2"}), running, fp.Succeeded("https://results.example.com/exp_retry_after.csv")}, 0},
		{"unknown state stops", "exp_paused", []fp.Step{running, fp.State("paused", nil)}, 0},
		{"request budget exhausted", "exp_slow", []fp.Step{running}, 3},
		{"authorization denied", "exp_denied", []fp.Step{fp.Code(401, nil)}, 0},
		{"provider failure", "exp_flaky", []fp.Step{fp.Code(502, nil)}, 0},
	}
}

func demoCmd(env Env) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run six operations against a built-in fake provider and print each outcome and story",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return env.runDemo(cmd.Context(), keep)
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the demo's store and contract in a temporary directory and print its path")
	return cmd
}

func (env Env) runDemo(ctx context.Context, keep bool) error {
	srv := fp.New()
	defer srv.Close()
	const token = "demo-token-not-a-real-secret"
	srv.RequireToken(token)
	dir, err := os.MkdirTemp("", "pollwarden-demo-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	path := filepath.Join(dir, "demo-export.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(demoContract, srv.URL())), 0o600); err != nil {
		return err
	}
	ex, err := env.loadContract(path)
	if err != nil {
		return err
	}
	st, err := env.openStore(ctx, filepath.Join(dir, "demo.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	getenv := func(k string) (string, bool) {
		if k == "DEMO_PROVIDER_TOKEN" {
			return token, true
		}
		return "", false
	}
	ctl := controller.New(controller.Options{Store: st, Clock: controller.RealClock{}, Rand: newRand(),
		Prober: prober.New(prober.Options{Now: time.Now, Getenv: getenv})})
	fmt.Fprintf(env.Stdout, "pollwarden demo: six jobs at a fake provider on %s, contract %s\n", srv.URL(), contractOf(ex).Name)
	for i, c := range demoCases() {
		srv.Script(c.job, c.steps...)
		op, _, err := ctl.Submit(ctx, ex, policy.NewParams{ID: fmt.Sprintf("demo-%d-%s", i+1, c.job), ProviderJobID: c.job, MaxStatusRequests: c.maxRequests})
		if err != nil {
			return err
		}
		final, err := ctl.Wait(ctx, ex, op.ID, nil)
		if err != nil {
			return err
		}
		events, err := st.EventList(ctx, op.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "\n== %d. %s: %s (exit code %d)\n", i+1, c.title, outcomeWords(final), ExitCode(final))
		for _, l := range audit.Story(events, time.Local) {
			fmt.Fprintln(env.Stdout, "   "+l)
		}
		fmt.Fprintf(env.Stdout, "   provider saw %d status requests\n", srv.Count(c.job))
	}
	if keep {
		fmt.Fprintf(env.Stdout, "\nstore and contract kept in %s\n", dir)
	}
	return nil
}

func outcomeWords(op *pollwarden.Operation) string {
	s := string(op.Phase)
	if op.Reason != "" {
		s += " " + string(op.Reason)
	}
	if len(op.Result) > 0 {
		s += ", result " + strings.TrimSpace(string(op.Result))
	}
	return s
}
