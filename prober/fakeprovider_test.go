package prober

import (
	"context"
	"testing"

	"github.com/pollwarden/pollwarden"

	"github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestAgainstFakeProvider checks the prober and the fake provider agree on
// the wire: token required, steps in order, cancel as its own action.
func TestAgainstFakeProvider(t *testing.T) {
	fp := fakeprovider.New()
	defer fp.Close()
	fp.RequireToken(token)
	fp.Script("exp_71c", fakeprovider.State("running", nil), fakeprovider.Succeeded("https://files.example.com/r.csv"))
	c := testContract(fp.URL())
	p := newTestProber(map[string]string{"EXPORT_API_TOKEN": token})

	first := p.Status(context.Background(), c, fp.URL()+"/jobs/exp_71c")
	second := p.Status(context.Background(), c, fp.URL()+"/jobs/exp_71c")
	if first.Status != 200 || second.Status != 200 || string(second.rawBody()) != `{"job_id":"exp_71c","result":{"url":"https://files.example.com/r.csv"},"state":"succeeded"}` {
		t.Fatalf("first=%+v second=%s", first, second.rawBody())
	}
	if fp.Count("exp_71c") != 2 || fp.MaxInFlight("exp_71c") != 1 {
		t.Errorf("count=%d inflight=%d", fp.Count("exp_71c"), fp.MaxInFlight("exp_71c"))
	}
	cancel := p.Action(context.Background(), c, &pollwarden.Action{}, fp.URL()+"/jobs/exp_71c/cancel", nil, nil)
	if cancel.Status != 200 || fp.Cancels("exp_71c") != 1 {
		t.Errorf("cancel=%+v cancels=%d", cancel, fp.Cancels("exp_71c"))
	}
}
