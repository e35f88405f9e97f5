package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/sqlite"
)

// TestWebhooksListAndRedeliver: an operator sees the outbox, and a dead
// message queued again is pending with its attempts counted from zero and
// its id and body unchanged; a pending or unknown one is refused (exit 2)
// without changing anything.
func TestWebhooksListAndRedeliver(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pw.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	body := []byte(`{"type":"operation.escalated","data":{"operation_id":"op-1"}}`)
	msgs := []pollwarden.OutboxMessage{
		{ID: "msg_1", Key: "k1", Endpoint: "ops", EventPos: 1, OperationID: "op-1", Type: "operation.escalated", Body: body, CreatedAt: now},
		{ID: "msg_2", Key: "k2", Endpoint: "ops", EventPos: 2, OperationID: "op-2", Type: "operation.succeeded", Body: body, CreatedAt: now},
	}
	if err := st.OutboxEnqueue(ctx, pollwarden.OutboxEnqueueParams{From: -1, To: 2, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.OutboxClaim(ctx, pollwarden.OutboxClaimParams{Owner: "t", Now: now, TTL: time.Minute, Limit: 1, Endpoints: []string{"ops"}})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if err := st.OutboxSettle(ctx, pollwarden.OutboxSettleParams{Seq: claimed[0].Seq, Owner: "t", Attempt: 1,
		Status: pollwarden.OutboxDead, LastStatus: 500, LastError: "HTTP 500", Now: now}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	out, _ := mustRun(t, ExitOK, nil, "webhooks", "list", "--store", path, "--status", "dead")
	if !strings.Contains(out, "msg_1") || !strings.Contains(out, "HTTP 500") || strings.Contains(out, "msg_2") {
		t.Fatalf("list --status dead:\n%s", out)
	}
	mustRun(t, ExitOK, nil, "webhooks", "redeliver", "--store", path, "1")
	_, errs := mustRun(t, ExitUsage, nil, "webhooks", "redeliver", "--store", path, "2", "9")
	if !strings.Contains(errs, "webhook message 2 is still pending") || !strings.Contains(errs, "no webhook message 9") {
		t.Fatalf("refusals not named:\n%s", errs)
	}
	mustRun(t, ExitUsage, nil, "webhooks", "redeliver", "--store", path, "x")
	mustRun(t, ExitUsage, nil, "webhooks", "list", "--store", path, "--status", "lost")

	out, _ = mustRun(t, ExitOK, nil, "webhooks", "list", "--store", path, "--json")
	var views []outboxView
	if err := json.Unmarshal([]byte(out), &views); err != nil {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	if len(views) != 2 || views[0].Status != "pending" || views[0].Attempts != 0 || views[0].WebhookID != "msg_1" ||
		string(views[0].Body) != string(body) || views[0].NextAttemptAt == nil {
		t.Fatalf("after redeliver: %+v", views)
	}
}
