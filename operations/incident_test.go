package operations_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
	"github.com/pollwarden/pollwarden/operations"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// TestRetryCredentialOnAnIncident: refused while the credential reads as
// the refused one; once it changed, one decision closes the incident and
// gives the refused operation its one request with the new credential,
// and the held operations resume.
func TestRetryCredentialOnAnIncident(t *testing.T) {
	srv := fp.New()
	t.Cleanup(srv.Close)
	srv.RequireToken("new-token")
	for _, id := range []string{"r", "h1", "h2"} {
		srv.Script(id, fp.State("running", nil))
	}
	dir := t.TempDir()
	yaml := `version: 1
name: export
status: {url: "` + srv.URL() + `/jobs/{job_id}", timeout: 2s, credential: {header: Authorization, scheme: Bearer, secret: "env:TOK"}}
state: {path: state, pending: [running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}]}
backoff: {base: 10ms, max: 20ms}
limits: {deadline: 10m, max_status_requests: 5, max_transport_failures: 3, max_rate_limited: 3}
`
	if err := os.WriteFile(filepath.Join(dir, "export.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := contract.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var tok atomic.Value
	tok.Store("old-token")
	getenv := func(k string) (string, bool) { return tok.Load().(string), k == "TOK" }
	ctl := controller.New(controller.Options{Store: st, Clock: pollwarden.RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: time.Now, Getenv: getenv})})
	svc := operations.New(operations.Options{Controller: ctl, Contracts: set, Getenv: getenv})
	ex, _ := set.Get("export")
	ctx := context.Background()
	for _, id := range []string{"r", "h1", "h2"} {
		if _, err := ctl.Start(ctx, ex, policy.NewParams{ID: id, ProviderJobID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := ctl.Step(ctx, ex, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Count("h1") + srv.Count("h2"); n != 0 {
		t.Fatalf("%d requests went under the refused credential", n)
	}
	approver := token("alice", pollwarden.RoleApprover, "")
	list, err := svc.Incidents(ctx, approver, true, "")
	if err != nil || len(list) != 1 || list[0].Held != 2 {
		t.Fatalf("open incidents: %+v, %v", list, err)
	}
	id := list[0].ID
	p := operations.IncidentDecisionParams{Caller: approver, ID: id, Option: pollwarden.OptionRetryCredential}
	if _, err := svc.DecideIncident(ctx, p); operations.KindOf(err) != operations.Conflict {
		t.Fatalf("retry with the refused credential: %v, want a conflict", err)
	}
	tok.Store("new-token")
	d, err := svc.DecideIncident(ctx, p)
	if err != nil || !slices.Equal(d.Applied, []string{"r"}) || d.Incident.Open() {
		t.Fatalf("retry with the changed credential: %+v, %v", d, err)
	}
	res, err := ctl.Step(ctx, ex, "r")
	if err != nil || !res.Sent || res.Op.LastState != "running" {
		t.Fatalf("the refused operation's one request: %+v, %v", res, err)
	}
	// The held operations resume (spread, then one request each).
	for _, h := range []string{"h1", "h2"} {
		for i := 0; srv.Count(h) == 0; i++ {
			if i == 100 {
				t.Fatalf("%s never resumed", h)
			}
			res, err := ctl.Step(ctx, ex, h)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Until(res.Until))
		}
	}
}
