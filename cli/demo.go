package cli

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/spf13/cobra"
)

// demoContract is a real contract file, run against the in-process fake
// provider with short delays. Its submit block declares an idempotency
// key, as providers that document idempotent submission do.
const demoContract = `version: 1
name: demo-export
base_url: "%s"
status:
  url: "/jobs/{job_id}"
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
submit: {url: "/jobs", idempotency_key_header: Idempotency-Key, job_id_path: id}
`

const demoLong = `demo is a tour of pollwarden in a few seconds. It runs one job for every
outcome a user can meet (succeeded, failed, cancelled, expired, and each
escalation reason: deadline_exceeded, request_budget_exhausted,
rate_limited, unknown_state, authorization_denied, provider_failure,
integration_failure) against an in-process fake provider, in a temporary
store, and prints each outcome with its story. Each escalation shows its
options with their cost and new limit, and the command that answers it; one
is answered by an approver and the wait goes on. A submission is then
interrupted between send and answer, as by a crash, and resumed without a
second job at the provider. Last, the store's hash chain is verified.

Waits are simulated: the demo's clock jumps forward instead of sleeping, so
the stories show the delays a real wait would take. --keep keeps the store
and the contract, so the printed commands can be tried afterwards. With
--audit-key the event payloads are sealed with that key, as in a real store.`

func demoCmd(env Env) *cobra.Command {
	var keep bool
	var key string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "A tour: one job per outcome at a built-in fake provider, each with its story and how to answer it",
		Long:  demoLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return env.runDemo(cmd.Context(), keep, key)
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the demo's store and contract in a temporary directory and print its path")
	cmd.Flags().StringVar(&key, "audit-key", "", auditKeyHelp)
	return cmd
}

// demoOptions make a demo run reproducible: tests pass a fixed start and
// a seeded random source, the command the current time and a fresh one.
type demoOptions struct {
	dir    string // the store and contract are written here
	clock  pollwarden.Clock
	rand   *rand.Rand
	loc    *time.Location // for the stories
	sealer audit.Sealer
	keep   bool
}

// demoRun is one run's wiring: the provider, the store, the controller.
type demoRun struct {
	out      io.Writer
	srv      *fp.Server
	st       pollwarden.Store
	ex       *contract.Loaded
	ctl      *controller.Controller
	probe    *prober.Prober
	clock    pollwarden.Clock
	loc      *time.Location
	rand     *rand.Rand
	store    string // paths, for the commands the tour prints
	contract string
	// escalated is the first operation the tour leaves escalated, for
	// the commands --keep suggests.
	escalated string
}

const demoToken = "demo-token-not-a-real-secret"

// demo runs the tour in a store under o.dir, printing it on env.Stdout,
// and returns the verifier that walked the store's chain afterwards.
func (env Env) demo(ctx context.Context, o demoOptions) (*audit.Verifier, error) {
	srv := fp.New()
	defer srv.Close()
	srv.RequireToken(demoToken)
	r := &demoRun{out: env.Stdout, srv: srv, clock: o.clock, loc: o.loc, rand: o.rand,
		store: filepath.Join(o.dir, "demo.db"), contract: filepath.Join(o.dir, "demo-export.yaml")}
	if err := os.WriteFile(r.contract, []byte(fmt.Sprintf(demoContract, srv.URL())), 0o600); err != nil {
		return nil, err
	}
	var err error
	if r.ex, err = env.loadContract(r.contract); err != nil {
		return nil, err
	}
	st, err := env.openWith(ctx, r.store, o.sealer, false)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := st.CheckSealing(ctx); err != nil {
		return nil, usage(err)
	}
	r.st = st
	getenv := func(k string) (string, bool) { return demoToken, k == "DEMO_PROVIDER_TOKEN" }
	r.probe = prober.New(prober.Options{Now: o.clock.Now, Getenv: getenv})
	r.ctl = r.controller()
	fmt.Fprintf(r.out, "pollwarden demo: %d jobs at a fake provider on %s, contract %s (simulated time: waits take no time)\n",
		len(demoCases())+1, srv.URL(), contractOf(r.ex).Name)
	for i, c := range demoCases() {
		if err := r.runCase(ctx, i+1, c); err != nil {
			return nil, err
		}
	}
	if err := r.crashedSubmission(ctx, len(demoCases())+1); err != nil {
		return nil, err
	}
	v := new(audit.Verifier)
	if err := v.Walk(ctx, st, verifyPage); err != nil {
		return nil, err
	}
	sealed := "plain payloads"
	if o.sealer != nil {
		sealed = "payloads sealed with key " + o.sealer.KeyID()
	}
	fmt.Fprintf(r.out, "\naudit: %d events of %d operations in one hash chain, intact (%s); head %s\n",
		v.Pos(), v.Operations(), sealed, v.Hash())
	r.printNext(o.keep, o.dir)
	return v, nil
}

// controller is a new controller over the run's store, as a new process
// would make.
func (r *demoRun) controller() *controller.Controller {
	return controller.New(controller.Options{Store: r.st, Clock: r.clock, Rand: r.rand, Prober: r.probe})
}

// runCase waits on one scripted job and prints its outcome and story.
func (r *demoRun) runCase(ctx context.Context, n int, c demoCase) error {
	// The cases are separate stories on one credential: a rate limit
	// learned in one (its 429 holds the whole key until its reset) is
	// waited out before the next begins, as the clock jumps.
	if ks, err := r.st.KeyGet(ctx, pollwarden.QuotaKey(r.ex.Spec())); err == nil && ks.HoldUntil.After(r.clock.Now()) {
		if err := r.clock.Sleep(ctx, ks.HoldUntil.Sub(r.clock.Now())); err != nil {
			return err
		}
	}
	if err := r.closeIncident(ctx); err != nil {
		return err
	}
	r.srv.Script(c.job, c.steps...)
	id := fmt.Sprintf("demo-%d-%s", n, c.job)
	op, err := r.ctl.Start(ctx, r.ex, policy.NewParams{ID: id, ProviderJobID: c.job, MaxStatusRequests: c.maxRequests})
	if err != nil {
		return err
	}
	final, err := r.ctl.Wait(ctx, r.ex, op.ID, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(r.out, "\n== %d. %s\n", n, c.title)
	r.printOutcome(final)
	if c.extend && final.Escalation != nil {
		approver := pollwarden.Actor{Name: "demo-approver", Role: pollwarden.RoleApprover}
		fmt.Fprintf(r.out, "   an approver answers: pollwarden decide %s extend --by %s --note \"month-end export\"\n", id, approver.Name)
		if _, err := r.ctl.Decide(ctx, r.ex, id, policy.DecisionParams{Option: pollwarden.OptionExtend, Actor: approver, Note: "month-end export"}); err != nil {
			return err
		}
		fmt.Fprintf(r.out, "   and the wait goes on (pollwarden wait with the same flags resumes it):\n")
		if final, err = r.ctl.Wait(ctx, r.ex, id, nil); err != nil {
			return err
		}
		r.printOutcome(final)
	}
	if final.Phase == pollwarden.PhaseEscalated && r.escalated == "" {
		r.escalated = id
	}
	if err := r.printStory(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "   the provider saw %s\n", plural(r.srv.Count(c.job), "status request"))
	return nil
}

// printOutcome prints the outcome line and, for an escalation, the
// decision it asks for: each option with its cost and new limit, and the
// command that answers it.
func (r *demoRun) printOutcome(op *pollwarden.Operation) {
	fmt.Fprintf(r.out, "   outcome: %s (exit code %d)\n", outcomeWords(op), ExitCode(op))
	if len(op.ProviderError) > 0 {
		fmt.Fprintf(r.out, "   provider error kept: %s\n", strings.TrimSpace(string(op.ProviderError)))
	}
	if op.Escalation == nil || op.Phase != pollwarden.PhaseEscalated {
		return
	}
	fmt.Fprintf(r.out, "   the decision it asks of a person:\n")
	for line := range strings.SplitSeq(op.Escalation.Message, "\n") {
		fmt.Fprintf(r.out, "     | %s\n", line)
	}
	fmt.Fprintf(r.out, "   answered by one of:\n")
	for _, o := range op.Escalation.Options {
		fmt.Fprintf(r.out, "     pollwarden decide %s %s --by NAME\n", op.ID, o.ID)
	}
}

func (r *demoRun) printStory(ctx context.Context, id string) error {
	events, err := r.st.EventList(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(r.out, "   story (pollwarden audit show %s):\n", id)
	for _, l := range audit.Story(events, r.loc) {
		fmt.Fprintln(r.out, "     "+l)
	}
	return nil
}

// printNext ends the tour with where to go from here. The fake provider
// stops with the demo, so --keep offers the commands that work on the
// kept store alone, and says that a resumed wait would find no provider.
func (r *demoRun) printNext(keep bool, dir string) {
	if keep {
		fmt.Fprintf(r.out, `
store and contract kept in %s. The fake provider stopped with the demo, so a
resumed wait there would find no one to ask; the record, the stories and the
decisions are all in the store:
  export POLLWARDEN_STORE=%s POLLWARDEN_CONTRACTS=%s
  pollwarden ops list
  pollwarden ops show %s
  pollwarden audit show %s
  pollwarden decide %s abandon --by NAME
  pollwarden audit verify
`, dir, r.store, dir, r.escalated, r.escalated, r.escalated)
	} else {
		fmt.Fprintf(r.out, "\nthe store was temporary: run pollwarden demo --keep to keep it and try the commands above\n")
	}
	fmt.Fprint(r.out, `
next: wait on your own job, with a built-in contract:
  pollwarden contract list                      # the built-in contracts
  pollwarden contract show openai-batch         # one of them, as YAML
  export OPENAI_API_KEY=...                     # the secret stays in your environment
  pollwarden wait --contract openai-batch --job-id batch_abc123 --deadline 30m
`)
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
	_, err = env.demo(ctx, demoOptions{dir: dir, clock: pollwarden.NewJumpClock(time.Now().Truncate(time.Second)), rand: newRand(),
		loc: time.Local, sealer: sealer, keep: keep})
	return err
}

// plural is "1 job", "2 jobs".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
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

// closeIncident ends an incident a case opened on the demo's one
// credential (the refused credential's case opens one at once, which holds
// every operation under the key), as an approver's decision on it would,
// so the next case's story is its own.
func (r *demoRun) closeIncident(ctx context.Context) error {
	ks, err := r.st.KeyGet(ctx, pollwarden.QuotaKey(r.ex.Spec()))
	if err != nil || ks.Incident.Open == nil {
		return nil
	}
	now := r.clock.Now()
	approver := pollwarden.Actor{Name: "demo-approver", Role: pollwarden.RoleApprover}
	what := "closed by the demo before its next case, with nothing held"
	inc, err := r.st.IncidentDecide(ctx, pollwarden.IncidentDecideParams{ID: ks.Incident.Open.ID, Now: now,
		ClosedBy: "decision: " + what,
		Decision: pollwarden.DecisionRecord{Option: pollwarden.OptionAbandon, By: approver, At: now, Outcome: what}})
	if err != nil {
		return err
	}
	fmt.Fprintf(r.out, "\n   incident %s (%s, opened by %s) holds every operation under the credential\n   until an approver answers it (retry_credential once the secret is changed, or abandon):\n   pollwarden serve shows it at /ui/incidents/%s; the demo closes it before its next case\n",
		inc.ID, inc.Kind, strings.Join(inc.Operations, ", "), inc.ID)
	return nil
}
