package operations_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
	"github.com/pollwarden/pollwarden/tokens"
)

// world is a fake provider, one contract on it (deadline 10m, 5 status
// requests) and a Service over a SQLite store on disk.
type world struct {
	fp    *fp.Server
	store *sqlite.Store
	set   *contract.Set
	ops   *operations.Service
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{fp: fp.New()}
	t.Cleanup(w.fp.Close)
	w.fp.Script("run", fp.State("running", nil))
	dir := t.TempDir()
	yaml := `version: 1
name: export
status: {url: "` + w.fp.URL() + `/jobs/{job_id}", timeout: 2s}
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}]}
limits: {deadline: 10m, max_status_requests: 5, max_transport_failures: 3, max_rate_limited: 3}
`
	if err := os.WriteFile(filepath.Join(dir, "export.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	if w.set, err = contract.LoadDir(dir); err != nil {
		t.Fatal(err)
	}
	if w.store, err = sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.store.Close() })
	ctl := controller.New(controller.Options{Store: w.store, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: time.Now})})
	w.ops = operations.New(operations.Options{Controller: ctl, Contracts: w.set})
	return w
}

func token(name string, role pollwarden.Role, scope tokens.Scope) operations.Caller {
	return operations.Caller{Caller: tokens.Caller{Actor: pollwarden.Actor{Name: name, Role: role}, Scope: scope}}
}

func intp(n int) *int { return &n }

// TestCreateReportsEveryProblemAtOnce: a bad id, a bad deadline and a
// limit above the contract's are one refusal listing all three, the limit
// marked as widening authority and named by its field; nothing is stored.
func TestCreateReportsEveryProblemAtOnce(t *testing.T) {
	w := newWorld(t)
	_, _, err := w.ops.Create(context.Background(), operations.CreateParams{Caller: token("agent", pollwarden.RoleAgent, ""),
		CreateRequest: operations.CreateRequest{OperationID: "op 1", Contract: "export", JobID: "run", Deadline: "tomorrow", MaxStatusRequests: intp(9)}})
	p, ok := operations.AsProblems(err)
	if !ok || p.Kind != operations.Invalid || len(p.List) != 3 {
		t.Fatalf("got %v, want three invalid problems", err)
	}
	var widens []string
	for _, pr := range p.List {
		if pr.Widens {
			widens = append(widens, pr.Field)
		}
	}
	if len(widens) != 1 || widens[0] != "max_status_requests" {
		t.Errorf("widening problems %v, want max_status_requests alone: %v", widens, err)
	}
	if ops, _ := w.store.OperationList(context.Background(), pollwarden.ListParams{}); len(ops) != 0 {
		t.Errorf("a refused create stored %d operations", len(ops))
	}
}

// TestOnlyAnApproverRaisesAndNeverThroughATool: an approver's token may
// create an operation with more requests than the contract's; the same
// request through a tool (MCP) is refused, whatever the role.
func TestOnlyAnApproverRaisesAndNeverThroughATool(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	p := operations.CreateParams{Caller: token("alice", pollwarden.RoleApprover, ""),
		CreateRequest: operations.CreateRequest{Contract: "export", JobID: "run", MaxStatusRequests: intp(9)}}
	op, created, err := w.ops.Create(ctx, p)
	if err != nil || !created || op.MaxStatusRequests != 9 {
		t.Fatalf("approver: %v %v %v", op, created, err)
	}
	p.Caller.Tool, p.JobID = true, "run2"
	if _, _, err := w.ops.Create(ctx, p); operations.KindOf(err) != operations.Invalid {
		t.Errorf("approver through a tool: %v, want refused", err)
	}
	p.Caller, p.Caller.Tool = token("agent", pollwarden.RoleAgent, ""), false
	if _, _, err := w.ops.Create(ctx, p); operations.KindOf(err) != operations.Invalid {
		t.Errorf("agent: %v, want refused", err)
	}
}

// TestCheckNeedsNoStore: a door that must not open its store for a bad
// request judges it with Check, with no controller at all, and learns the
// id Create will use.
func TestCheckNeedsNoStore(t *testing.T) {
	w := newWorld(t)
	ex, _ := w.set.Get("export")
	o := operations.Options{Contracts: operations.Only(ex)}
	local := operations.Caller{Local: true, Owner: "cli:alice"}
	if _, err := operations.Check(o, operations.CreateParams{Caller: local, CreateRequest: operations.CreateRequest{Contract: "export", JobID: "run", Deadline: "-5m"}}); operations.KindOf(err) != operations.Invalid {
		t.Errorf("bad deadline: %v", err)
	}
	id, err := operations.Check(o, operations.CreateParams{Caller: local, CreateRequest: operations.CreateRequest{Contract: "export", JobID: "run"}})
	if err != nil || !strings.HasPrefix(id, "export-") {
		t.Fatalf("Check: %q %v", id, err)
	}
	op, _, err := w.ops.Create(context.Background(), operations.CreateParams{Caller: local, CreateRequest: operations.CreateRequest{Contract: "export", JobID: "run"}})
	if err != nil || op.ID != id {
		t.Errorf("Create made %v (%v), Check said %q", op, err, id)
	}
}

// TestAbandonIsTheOwnersOrAnApprovers: an agent that sees every
// operation still may not stop another's; the owner and an approver may,
// without an escalation first; a second abandon is a conflict.
func TestAbandonIsTheOwnersOrAnApprovers(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	owner := token("build-agent", pollwarden.RoleAgent, "")
	for _, job := range []string{"run", "run2"} {
		if _, _, err := w.ops.Create(ctx, operations.CreateParams{Caller: owner, CreateRequest: operations.CreateRequest{OperationID: "op-" + job, Contract: "export", JobID: job}}); err != nil {
			t.Fatal(err)
		}
	}
	other := token("other", pollwarden.RoleAgent, tokens.ScopeAll)
	if _, err := w.ops.Abandon(ctx, operations.DecisionParams{Caller: other, ID: "op-run"}); operations.KindOf(err) != operations.Forbidden {
		t.Errorf("another agent's abandon: %v, want forbidden", err)
	}
	if _, err := w.ops.Abandon(ctx, operations.DecisionParams{Caller: token("stranger", pollwarden.RoleAgent, ""), ID: "op-run"}); operations.KindOf(err) != operations.NotFound {
		t.Errorf("an agent that cannot see it: %v, want not found", err)
	}
	if op, err := w.ops.Abandon(ctx, operations.DecisionParams{Caller: owner, ID: "op-run"}); err != nil || op.Phase.Polling() {
		t.Errorf("the owner's abandon: %v %v", op, err)
	}
	if _, err := w.ops.Abandon(ctx, operations.DecisionParams{Caller: owner, ID: "op-run"}); operations.KindOf(err) != operations.Conflict {
		t.Errorf("a second abandon: %v, want conflict", err)
	}
	if op, err := w.ops.Abandon(ctx, operations.DecisionParams{Caller: token("alice", pollwarden.RoleApprover, ""), ID: "op-run2"}); err != nil || op.Phase.Polling() {
		t.Errorf("an approver's abandon: %v %v", op, err)
	}
	if _, err := w.ops.Decide(ctx, operations.DecisionParams{Caller: owner, ID: "op-run2", Option: "extend"}); operations.KindOf(err) != operations.Forbidden {
		t.Errorf("an agent's decision: %v, want forbidden", err)
	}
}

// TestNoteLimitCountsCharacters: a note of MaxNote characters is taken
// whatever their size in bytes, as the console's maxlength lets it
// through; one more is refused, naming the note.
func TestNoteLimitCountsCharacters(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	owner := token("build-agent", pollwarden.RoleAgent, "")
	for _, job := range []string{"run", "run2"} {
		if _, _, err := w.ops.Create(ctx, operations.CreateParams{Caller: owner, CreateRequest: operations.CreateRequest{OperationID: "op-" + job, Contract: "export", JobID: job}}); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("é", operations.MaxNote+1)
	_, err := w.ops.Abandon(ctx, operations.DecisionParams{Caller: owner, ID: "op-run", Note: long})
	if operations.KindOf(err) != operations.Invalid || !strings.Contains(err.Error(), "note") {
		t.Fatalf("a note of %d characters: %v, want invalid naming the note", operations.MaxNote+1, err)
	}
	if op, err := w.ops.Abandon(ctx, operations.DecisionParams{Caller: owner, ID: "op-run2", Note: long[len("é"):]}); err != nil || op.Phase.Polling() {
		t.Fatalf("a note of %d characters (%d bytes): %v", operations.MaxNote, len(long)-len("é"), err)
	}
}

// TestExtensionReportsEachFieldOnce: an extra time that is not a duration
// is refused as typed, once (not again as "both zero"), beside the other
// problems, each with its field; nothing reaches the audit.
func TestExtensionReportsEachFieldOnce(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	owner := token("build-agent", pollwarden.RoleAgent, "")
	if _, _, err := w.ops.Create(ctx, operations.CreateParams{Caller: owner, CreateRequest: operations.CreateRequest{OperationID: "op-x", Contract: "export", JobID: "run"}}); err != nil {
		t.Fatal(err)
	}
	_, _, err := w.ops.RequestExtension(ctx, operations.ExtensionParams{Caller: owner, ID: "op-x", ExtraTime: "soon", ExtraStatusRequests: -2})
	p, ok := operations.AsProblems(err)
	if !ok || p.Kind != operations.Invalid {
		t.Fatalf("got %v, want invalid", err)
	}
	var fields []string
	for _, pr := range p.List {
		fields = append(fields, pr.Field)
	}
	if got := strings.Join(fields, ","); got != "extra_time,extra_status_requests,justification" || !strings.Contains(p.Error(), `"soon"`) {
		t.Errorf("problems on %s: %v", got, err)
	}
	events, err := w.store.EventList(ctx, "op-x")
	if err != nil || len(events) != 1 {
		t.Errorf("the refused request wrote to the audit: %d events, %v", len(events), err)
	}
	if _, ext, err := w.ops.RequestExtension(ctx, operations.ExtensionParams{Caller: owner, ID: "op-x", ExtraTime: "0s", ExtraStatusRequests: 2, Justification: "  slow export  "}); err != nil || ext.Justification != "slow export" {
		t.Errorf("requests only: %+v %v", ext, err)
	}
}

// TestListLimitIsOneRule: a token's caller and an agent's tool list 1 to
// 1000 operations; a person at the store file (the CLI) also may ask for
// 0, all, and gets all by default. Each bad limit names the field as the
// door spells it.
func TestListLimitIsOneRule(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	cli := operations.Caller{Local: true, Owner: "cli:alice"}
	for _, job := range []string{"run", "run2", "run3"} {
		if _, _, err := w.ops.Create(ctx, operations.CreateParams{Caller: cli, CreateRequest: operations.CreateRequest{Contract: "export", JobID: job}}); err != nil {
			t.Fatal(err)
		}
	}
	tool := operations.Caller{Local: true, Owner: "mcp", Tool: true}
	api := token("alice", pollwarden.RoleApprover, "")
	for _, tc := range []struct {
		who   string
		c     operations.Caller
		limit string
		want  int // -1: refused
	}{
		{"cli", cli, "", 3}, {"cli", cli, "0", 3}, {"cli", cli, "2", 2}, {"cli", cli, "5000", 3}, {"cli", cli, "-1", -1}, {"cli", cli, "x", -1},
		{"tool", tool, "", 3}, {"tool", tool, "0", -1}, {"tool", tool, "1001", -1}, {"tool", tool, "1000", 3},
		{"api", api, "0", -1}, {"api", api, "1", 1}, {"api", api, "1001", -1},
	} {
		p := operations.ListParams{Caller: tc.c, Limit: tc.limit, Names: map[string]string{"limit": "--limit"}}
		list, err := w.ops.List(ctx, p)
		checkErr := operations.CheckList(p)
		switch {
		case tc.want < 0 && (operations.KindOf(err) != operations.Invalid || !strings.Contains(err.Error(), "--limit") || checkErr == nil):
			t.Errorf("%s limit %q: %v (check %v), want refused naming --limit", tc.who, tc.limit, err, checkErr)
		case tc.want >= 0 && (err != nil || len(list) != tc.want || checkErr != nil):
			t.Errorf("%s limit %q: %d operations, %v (check %v), want %d", tc.who, tc.limit, len(list), err, checkErr, tc.want)
		}
	}
}
