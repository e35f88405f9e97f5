package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pollwarden/pollwarden/webhook"
)

var _ webhook.Observer = (*Webhooks)(nil)

func TestWebhookAttemptsByEndpointAndResult(t *testing.T) {
	reg := prometheus.NewRegistry()
	w := NewWebhooks(reg)
	w.WebhookAttempt("ops", "retry")
	w.WebhookAttempt("ops", "retry")
	w.WebhookAttempt("ops", "delivered")
	w.WebhookAttempt("audit", "dead")
	want := `
# HELP pollwarden_webhook_attempts_total Webhook delivery attempts, by endpoint name and result: delivered, retry (failed, another attempt is scheduled) or dead (failed, no attempts left).
# TYPE pollwarden_webhook_attempts_total counter
pollwarden_webhook_attempts_total{endpoint="audit",result="dead"} 1
pollwarden_webhook_attempts_total{endpoint="ops",result="delivered"} 1
pollwarden_webhook_attempts_total{endpoint="ops",result="retry"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "pollwarden_webhook_attempts_total"); err != nil {
		t.Fatal(err)
	}
}
