package metrics

import "github.com/prometheus/client_golang/prometheus"

// Webhooks counts webhook delivery attempts; it implements
// webhook.Observer. It is separate from Metrics because a daemon without
// --webhooks should not export an always-empty series.
type Webhooks struct {
	attempts *prometheus.CounterVec
}

// NewWebhooks defines the webhook series on reg.
func NewWebhooks(reg prometheus.Registerer) *Webhooks {
	w := &Webhooks{attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pollwarden_webhook_attempts_total",
		Help: "Webhook delivery attempts, by endpoint name and result: delivered, retry (failed, another attempt is scheduled) or dead (failed, no attempts left).",
	}, []string{"endpoint", "result"})}
	reg.MustRegister(w.attempts)
	return w
}

// WebhookAttempt implements webhook.Observer.
func (w *Webhooks) WebhookAttempt(endpoint, result string) {
	w.attempts.WithLabelValues(endpoint, result).Inc()
}
