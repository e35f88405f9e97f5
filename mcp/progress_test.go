package mcp_test

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
	"github.com/pollwarden/pollwarden/changes"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	pwmcp "github.com/pollwarden/pollwarden/mcp"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// TestWaitJobSendsProgress runs the server in-process (no scheduler, so
// the job stays waiting) to check that a wait_job call carrying a progress
// token gets progress notifications, and that none carries the secret.
func TestWaitJobSendsProgress(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := `version: 1
name: progress-test
status:
  url: "https://api.example.com/jobs/{job_id}"
  credential: {header: Authorization, secret: "env:PROGRESS_TOKEN"}
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
limits: {deadline: 60s, max_status_requests: 10, max_transport_failures: 3, max_rate_limited: 3}
`
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := contract.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	changes := changes.NewFeed()
	ctl := controller.New(controller.Options{Store: st, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober:   prober.New(prober.Options{Now: time.Now, Getenv: os.LookupEnv}),
		OnChange: changes.Publish})
	srv := pwmcp.NewServer(pwmcp.Options{Ops: operations.New(operations.Options{Controller: ctl, Contracts: set, Changes: changes}),
		ProgressEvery: 100 * time.Millisecond})
	serverT, clientT := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ss, err := srv.Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	notes := make(chan *sdk.ProgressNotificationParams, 64)
	client := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "v0"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			notes <- r.Params
		},
	})
	cs, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	t.Setenv("PROGRESS_TOKEN", canary)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "watch_job", Arguments: map[string]any{
		"contract": "progress-test", "job_id": "j1", "operation_id": "op-progress"}})
	if err != nil || res.IsError {
		t.Fatalf("watch_job: %v %v", err, res)
	}
	params := &sdk.CallToolParams{Name: "wait_job", Arguments: map[string]any{"operation_id": "op-progress", "max_wait_seconds": 1}}
	params.SetProgressToken("tok-1")
	res, err = cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("wait_job: %v %v", err, res)
	}
	if m, _ := res.StructuredContent.(map[string]any); m["phase"] != "waiting" {
		t.Fatalf("wait_job %v", res.StructuredContent)
	}
	// The notifications sent during the wait may be delivered just after
	// its answer.
	select {
	case n := <-notes:
		checkProgress(t, n)
	case <-time.After(30 * time.Second):
		t.Fatal("no progress notification during a 1 s wait with a 100 ms period")
	}
	for {
		select {
		case n := <-notes:
			checkProgress(t, n)
		default:
			return
		}
	}
}

func checkProgress(t *testing.T, n *sdk.ProgressNotificationParams) {
	t.Helper()
	if n.ProgressToken != "tok-1" || !strings.Contains(n.Message, "op-progress") || strings.Contains(n.Message, canary) {
		t.Errorf("progress %+v", n)
	}
}
