package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	var key string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run six operations against a built-in fake provider and print each outcome and story",
		Long: `demo runs six jobs against an in-process fake provider (a success, a
Retry-After, an unknown state, an exhausted budget, a denied credential and a
failing gateway) in a temporary store, prints each outcome with its story,
then verifies the store's hash chain. With --audit-key the event payloads are
sealed with that key, as in a real store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return env.runDemo(cmd.Context(), keep, key)
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the demo's store and contract in a temporary directory and print its path")
	cmd.Flags().StringVar(&key, "audit-key", "", auditKeyHelp)
	return cmd
}

// demoOptions make a demo run reproducible: tests pass a fake clock and a
// seeded random source, the command the real ones.
type demoOptions struct {
	dir    string // the store and contract are written here
	clock  pollwarden.Clock
	rand   *rand.Rand
	loc    *time.Location // for the stories
	sealer audit.Sealer
	// started is told the provider's URL and the contract's name.
	started func(url, contract string)
	// done is told each case's outcome as it finishes.
	done func(i int, r demoResult)
}

type demoResult struct {
	title    string
	outcome  string
	exit     int
	story    []string
	requests int
}

// demo runs the six cases in a store under o.dir and returns the verifier
// that walked the store's chain afterwards.
func (env Env) demo(ctx context.Context, o demoOptions) (*audit.Verifier, error) {
	srv := fp.New()
	defer srv.Close()
	const token = "demo-token-not-a-real-secret"
	srv.RequireToken(token)
	path := filepath.Join(o.dir, "demo-export.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(demoContract, srv.URL())), 0o600); err != nil {
		return nil, err
	}
	ex, err := env.loadContract(path)
	if err != nil {
		return nil, err
	}
	st, err := env.openWith(ctx, filepath.Join(o.dir, "demo.db"), o.sealer, false)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := st.CheckSealing(ctx); err != nil {
		return nil, usage(err)
	}
	getenv := func(k string) (string, bool) {
		if k == "DEMO_PROVIDER_TOKEN" {
			return token, true
		}
		return "", false
	}
	ctl := controller.New(controller.Options{Store: st, Clock: o.clock, Rand: o.rand,
		Prober: prober.New(prober.Options{Now: o.clock.Now, Getenv: getenv})})
	if o.started != nil {
		o.started(srv.URL(), contractOf(ex).Name)
	}
	for i, c := range demoCases() {
		srv.Script(c.job, c.steps...)
		op, _, err := ctl.Submit(ctx, ex, policy.NewParams{ID: fmt.Sprintf("demo-%d-%s", i+1, c.job), ProviderJobID: c.job, MaxStatusRequests: c.maxRequests})
		if err != nil {
			return nil, err
		}
		final, err := ctl.Wait(ctx, ex, op.ID, nil)
		if err != nil {
			return nil, err
		}
		events, err := st.EventList(ctx, op.ID)
		if err != nil {
			return nil, err
		}
		if o.done != nil {
			o.done(i, demoResult{title: c.title, outcome: outcomeWords(final), exit: ExitCode(final),
				story: audit.Story(events, o.loc), requests: srv.Count(c.job)})
		}
	}
	v := new(audit.Verifier)
	return v, v.Walk(ctx, st, verifyPage)
}

func (env Env) runDemo(ctx context.Context, keep bool, keyFlag string) error {
	var sealer audit.Sealer
	k, err := env.sealKey(keyFlag)
	if err != nil {
		return err
	}
	if k != nil {
		sealer = k
	}
	dir, err := os.MkdirTemp("", "pollwarden-demo-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	out := env.Stdout
	v, err := env.demo(ctx, demoOptions{dir: dir, clock: env.clock(), rand: newRand(), loc: time.Local, sealer: sealer,
		started: func(url, name string) {
			fmt.Fprintf(out, "pollwarden demo: six jobs at a fake provider on %s, contract %s\n", url, name)
		},
		done: func(i int, r demoResult) {
			fmt.Fprintf(out, "\n== %d. %s: %s (exit code %d)\n", i+1, r.title, r.outcome, r.exit)
			for _, l := range r.story {
				fmt.Fprintln(out, "   "+l)
			}
			fmt.Fprintf(out, "   provider saw %d status requests\n", r.requests)
		}})
	if err != nil {
		return err
	}
	sealed := "plain payloads"
	if sealer != nil {
		sealed = "payloads sealed with key " + sealer.KeyID()
	}
	fmt.Fprintf(out, "\naudit: %d events of %d operations in one hash chain, intact (%s); head %s\n",
		v.Pos(), v.Operations(), sealed, v.Hash())
	if keep {
		fmt.Fprintf(out, "\nstore and contract kept in %s\n", dir)
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
