package doortest

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// secret is the provider credential every door's process has.
const secret = "sk-doortest-8c1d"

// agentName owns the seeded operations: the HTTP agent token's name, so
// that every door may act on them.
const agentName = "build-agent"

// Seeded operations every row may address.
const (
	opWaiting = "op-waiting"
	opDone    = "op-done"
)

// contractYAML is the suite's one contract on the fake provider: a
// deadline of 10m and 5 status requests an agent may only lower, and a
// variable with a pattern.
func contractYAML(base string) string {
	return `version: 1
name: export
vars:
  region: {pattern: "[a-z]{2}", default: eu}
status:
  url: "` + base + `/jobs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:API_TOKEN"}
  timeout: 2s
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed], cancelled: [cancelled], expired: [expired]}
result: {require: [{path: result.url, kind: url}], error_path: error}
cancel: {url: "` + base + `/jobs/{job_id}/cancel", method: POST}
backoff: {base: 10ms, max: 20ms}
limits: {deadline: 10m, max_status_requests: 5, max_transport_failures: 3, max_rate_limited: 3}
escalation:
  extension: {time: 15m, status_requests: 4}
  console_url: "https://console.example.com/{region}/jobs/{job_id}"
`
}

// rig is one row's world: a fake provider, a contract directory, a
// SQLite store on disk and a controller over it, with one waiting and
// one succeeded operation owned by agentName.
type rig struct {
	fp        *fp.Server
	dir       string // holds export.yaml
	storePath string
	store     *sqlite.Store
	contracts *contract.Set
	ctl       *controller.Controller
	app       *operations.Service // the one application the doors over this rig share, once built
	httpURL   string              // the API over this rig, once served
	mcp       *sdk.ClientSession  // a client of the MCP server over this rig, once connected
	uiURL     string              // the console over this rig, once served
}

// ops is the rig's one application, built once as cli builds it for a
// process and handed to every door.
func (r *rig) ops() *operations.Service {
	if r.app == nil {
		r.app = operations.New(operations.Options{Controller: r.ctl, Contracts: r.contracts})
	}
	return r.app
}

func (r *rig) getenv(k string) (string, bool) {
	switch k {
	case "API_TOKEN":
		return secret, true
	case "POLLWARDEN_CONTRACTS":
		return r.dir, true
	case "USER":
		return "alice", true
	}
	return "", false
}

func newRig(t *testing.T) *rig {
	t.Helper()
	ctx := context.Background()
	r := &rig{fp: fp.New(), dir: t.TempDir()}
	t.Cleanup(r.fp.Close)
	r.fp.RequireToken(secret)
	for _, job := range []string{"ok", "ok2", "done"} {
		r.fp.Script(job, fp.Succeeded("https://files.example.com/"+job+".csv"))
	}
	r.fp.Script("run", fp.State("running", nil))
	if err := os.WriteFile(filepath.Join(r.dir, "export.yaml"), []byte(contractYAML(r.fp.URL())), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	if r.contracts, err = contract.LoadDir(r.dir); err != nil {
		t.Fatal(err)
	}
	r.storePath = filepath.Join(t.TempDir(), "pw.db")
	if r.store, err = sqlite.Open(ctx, r.storePath, sqlite.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.store.Close() })
	r.ctl = controller.New(controller.Options{Store: r.store, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Owner: "doortest", Prober: prober.New(prober.Options{Now: time.Now, Getenv: r.getenv})})
	ex, _ := r.contracts.Get("export")
	who := pollwarden.Actor{Name: agentName, Role: pollwarden.RoleAgent}
	for id, job := range map[string]string{opWaiting: "run", opDone: "done"} {
		vars, err := contract.OperationVars(ex.Spec(), nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.ctl.Start(ctx, ex, policy.NewParams{ID: id, ProviderJobID: job, Vars: vars, Owner: agentName, By: &who}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.ctl.Step(ctx, ex, opDone); err != nil {
		t.Fatal(err)
	}
	if op, err := r.store.OperationGet(ctx, opDone); err != nil || op.Phase != pollwarden.PhaseSucceeded {
		t.Fatalf("seeding %s: %v %v", opDone, op, err)
	}
	return r
}

// facts is what a refused request must leave as it was: how many
// operations there are and how many audit events each has.
func (r *rig) facts(t *testing.T) map[string]int {
	t.Helper()
	ctx := context.Background()
	ops, err := r.store.OperationList(ctx, pollwarden.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, op := range ops {
		evs, err := r.store.EventList(ctx, op.ID)
		if err != nil {
			t.Fatal(err)
		}
		out[op.ID] = len(evs)
	}
	return out
}

// editContract rewrites the rig's contract file, old → new, and reloads
// it for every door (the CLI reads the directory itself).
func (r *rig) editContract(t *testing.T, old, new string) {
	t.Helper()
	path := filepath.Join(r.dir, "export.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("the contract has no %q", old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.contracts.Reload(); err != nil {
		t.Fatal(err)
	}
}
