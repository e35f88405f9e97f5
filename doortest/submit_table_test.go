package doortest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pollwarden/pollwarden/cli"
	"github.com/pollwarden/pollwarden/contract"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	pwmcp "github.com/pollwarden/pollwarden/mcp"
	"github.com/pollwarden/pollwarden/policy"
)

// The submission rows: a job pollwarden submits itself, through each
// door, and its result asked for before the job has succeeded. They use a
// second contract on the rig's provider, whose POST /jobs creates job
// sub-1 (scripted running, so the job stays waiting).

// submitContract is contractYAML with a submit block and a result fetch.
func submitContract(base string) string {
	c := strings.Replace(contractYAML(base), "name: export\n", "name: export-submit\n", 1)
	c = strings.Replace(c, "result: {require: [{path: result.url, kind: url}], error_path: error}",
		`result: {require: [{path: result.url, kind: url}], error_path: error, fetch: {url: "{+result.url}", max_bytes: 4096}}`, 1)
	return c + "submit: {url: \"" + base + "/jobs\", job_id_path: id}\n"
}

// submitBody is the submission every door sends: compact, keys sorted,
// so that a door re-encoding JSON sends the same bytes.
const submitBody = `{"format":"csv","report":"q3"}`

// submitRig is newRig with the submit contract loaded.
func submitRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t)
	r.fp.Script("sub-1", fp.State("running", nil))
	if err := os.WriteFile(filepath.Join(r.dir, "export-submit.yaml"), []byte(submitContract(r.fp.URL())), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	if r.contracts, err = contract.LoadDir(r.dir); err != nil {
		t.Fatal(err)
	}
	return r
}

// submitDoors submits submitBody as operation id through each door and
// returns its answer.
var submitDoors = map[string]func(t *testing.T, r *rig, id string) answer{
	"cli": func(t *testing.T, r *rig, id string) answer {
		body := filepath.Join(t.TempDir(), "body.json")
		if err := os.WriteFile(body, []byte(submitBody), 0o600); err != nil {
			t.Fatal(err)
		}
		return cliRun(t, r, "submit", "--contract", "export-submit", "--body", body, "--operation-id", id,
			"--no-wait", "--json", "--store", r.storePath)
	},
	"http": func(t *testing.T, r *rig, id string) answer {
		return post(t, httpServer(t, r), "/v1/operations", agentToken, map[string]any{
			"operation_id": id, "contract": "export-submit", "submit": map[string]any{"body": json.RawMessage(submitBody)}})
	},
	"mcp": func(t *testing.T, r *rig, id string) answer {
		return mcpCall(t, r, pwmcp.ToolSubmitJob, map[string]any{"operation_id": id, "contract": "export-submit", "body": json.RawMessage(submitBody)})
	},
}

// resultDoors asks each door for operation id's result, through the
// use-case hooks of usecases_test.go.
var resultDoors = map[string]func(t *testing.T, r *rig, req request) (answer, bool){
	"cli": cliUseCase, "http": httpUseCase, "mcp": mcpUseCase,
}

// TestDoorsSubmitTheSameRecord: the same submission through the CLI, the
// API and MCP leaves the same record (owner aside: each door's caller
// owns it) and the same story, and creates one job at the provider.
func TestDoorsSubmitTheSameRecord(t *testing.T) {
	t.Parallel()
	var first map[string]any
	var firstDoor string
	for _, door := range []string{"cli", "http", "mcp"} {
		t.Run(door, func(t *testing.T) {
			r := submitRig(t)
			a := submitDoors[door](t, r, "op-sub")
			if a.class != accepted || a.id != "op-sub" {
				t.Fatalf("submission answered %s (%q): %s", a.class, a.id, a.text)
			}
			if n := r.fp.Submits(); n != 1 {
				t.Fatalf("the provider created %d jobs, want 1", n)
			}
			got := submittedRecord(t, r, "op-sub")
			if first == nil {
				first, firstDoor = got, door
				return
			}
			if !reflect.DeepEqual(got, first) {
				t.Errorf("the record differs from the %s door's:\n%s: %v\n%s: %v", firstDoor, door, got, firstDoor, first)
			}
		})
	}
}

// TestDoorsRefuseResultBeforeSuccess: a submitted job still waiting has
// no result: each door refuses the fetch naming the phase, sends nothing
// to the provider and adds nothing to the story.
func TestDoorsRefuseResultBeforeSuccess(t *testing.T) {
	t.Parallel()
	for _, door := range []string{"cli", "http", "mcp"} {
		t.Run(door, func(t *testing.T) {
			r := submitRig(t)
			if a := submitDoors[door](t, r, "op-sub"); a.class != accepted {
				t.Fatalf("submission answered %s: %s", a.class, a.text)
			}
			before, sent := r.facts(t), r.fp.Count("sub-1")
			a, _ := resultDoors[door](t, r, request{kind: fetchResult, target: "op-sub"})
			want := conflict
			if door != "http" {
				want = refused
			}
			if a.class != want || !strings.Contains(a.text, "waiting") {
				t.Fatalf("result before success answered %s, want %s naming the phase: %s", a.class, want, a.text)
			}
			if after := r.facts(t); !sameFacts(before, after) || r.fp.Count("sub-1") != sent {
				t.Errorf("a refused fetch changed the store (%v, were %v) or reached the provider", after, before)
			}
		})
	}
}

// submittedRecord is the stored record and its story reduced to what
// every door must agree on.
func submittedRecord(t *testing.T, r *rig, id string) map[string]any {
	t.Helper()
	ctx := context.Background()
	op, err := r.store.OperationGet(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := r.store.EventList(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind))
	}
	s := op.Submission
	if s == nil {
		t.Fatalf("%s has no submission", id)
	}
	// Each rig's provider has its own port, so the fingerprints differ
	// between rigs; each must be the one of this very submission.
	ex, _ := r.contracts.Get(op.Contract)
	own := op.Fingerprint == policy.SubmitFingerprint(ex.Spec(), policy.BodyDigest([]byte(submitBody)), op.CredentialName, op.Vars)
	return map[string]any{
		"phase": op.Phase, "contract": op.Contract, "job": op.ProviderJobID, "status_url": op.StatusURL,
		"fingerprint of the submission": own, "credential": op.CredentialName, "vars": op.Vars,
		"max_status_requests": op.MaxStatusRequests, "max_transport_failures": op.MaxTransportFailures,
		"deadline": op.DeadlineAt.Sub(op.StartedAt).Round(time.Minute), "requests_used": op.StatusRequestsUsed,
		"submission": []any{s.State, s.BodySHA256, string(s.Body), s.IdempotencyKey, s.Attempts, s.MaxAttempts, s.HTTPStatus},
		"events":     slices.Clip(kinds),
	}
}

// cliRun runs the CLI in-process against r; exit 2 is a refusal.
func cliRun(t *testing.T, r *rig, args ...string) answer {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Env{Stdin: &bytes.Buffer{}, Stdout: &stdout, Stderr: &stderr, Getenv: r.getenv})
	a := answer{text: stderr.String()}
	switch code {
	case cli.ExitUsage:
		a.class = refused
	case cli.ExitInternal:
		a.class = broken
	case 0:
		a.class = accepted
		var out struct {
			ID string `json:"operation_id"`
		}
		if json.Unmarshal(stdout.Bytes(), &out) == nil {
			a.id = out.ID
		}
	default:
		a.class, a.text = broken, stdout.String()+stderr.String()
	}
	return a
}

// mcpCall calls one tool through r's MCP session.
func mcpCall(t *testing.T, r *rig, tool string, args map[string]any) answer {
	t.Helper()
	return callTool(t, mcpSession(t, r), tool, args)
}

// callTool calls one tool; a tool error (or a protocol error, such as
// arguments the tool's schema refuses) is a refusal, as the model sees
// it, and an accepted answer names its operation.
func callTool(t *testing.T, cs *sdk.ClientSession, tool string, args any) answer {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return answer{class: refused, text: err.Error()}
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return answer{class: refused, text: text.String()}
	}
	var out struct {
		ID string `json:"operation_id"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || out.ID == "" {
		t.Fatalf("%s answered without an operation id: %s", tool, b)
	}
	return answer{class: accepted, id: out.ID, text: text.String()}
}
