package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pollwarden/pollwarden"
	pwmetrics "github.com/pollwarden/pollwarden/metrics"
	"github.com/pollwarden/pollwarden/operations"
)

// metrics are the API's Prometheus series. They live in a registry the
// handler is given or creates, never the global default one, so that two
// handlers in one process (tests, an embedder) do not collide.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	handler  http.Handler
}

func newMetrics(reg *prometheus.Registry, ops *operations.Service) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pollwarden_api_requests_total",
			Help: "API requests by route pattern and HTTP status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pollwarden_api_request_duration_seconds",
			Help:    "API request duration by route pattern; long-polls included, so GET /v1/operations/{id} reaches its wait.",
			Buckets: []float64{.005, .025, .1, .5, 1, 5, 15, 30, 60},
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.duration, &phaseCollector{ops: ops, desc: prometheus.NewDesc(
		"pollwarden_operations",
		"Operations in the store by phase, counted from the store at scrape time (so other processes' operations count too).",
		[]string{"phase"}, nil)}, newQuotaCollector(ops))
	pwmetrics.RegisterIncidents(reg, ops.IncidentGauges)
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return m
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

// phaseCollector counts operations by phase on each scrape. A store
// shared by several processes or replicas is the only place that knows
// them all; an in-process counter would count only this one's.
type phaseCollector struct {
	ops  *operations.Service
	desc *prometheus.Desc
}

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.ops.PhaseCounts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, p := range pollwarden.Phases() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[p]), string(p))
	}
}

func (a *api) serveMetrics(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	a.metrics.handler.ServeHTTP(w, r)
	return nil
}

func (a *api) healthz(w http.ResponseWriter, _ *http.Request, _ pollwarden.Actor) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// maxQuotaSeries bounds the keys exported per gauge, so that a store with
// many credentials cannot grow a scrape without end; the keys are the
// operator's contracts' references, few in practice, and
// pollwarden_quota_keys says how many there are in all.
const maxQuotaSeries = 50

// quotaCollector reads the shared quotas (operations.Reader.Quotas) on
// each scrape: the store is the only place that knows what every process
// and replica took from a key.
type quotaCollector struct {
	ops                                         *operations.Service
	keys, limit, used, remaining, waiting, held *prometheus.Desc
}

func newQuotaCollector(ops *operations.Service) *quotaCollector {
	key := []string{"key"}
	return &quotaCollector{ops: ops,
		keys:      prometheus.NewDesc("pollwarden_quota_keys", "Quota keys the store holds a row for or operations wait on; at most 50 are exported by key.", nil, nil),
		limit:     prometheus.NewDesc("pollwarden_quota_limit", "Requests a key's declared quota allows per window (0 when none is declared).", key, nil),
		used:      prometheus.NewDesc("pollwarden_quota_requests_used", "Requests granted under a key in its current window, by every process and replica.", key, nil),
		remaining: prometheus.NewDesc("pollwarden_quota_provider_remaining", "The provider's last remaining count for a key (its remaining header); absent until one is read.", key, nil),
		waiting:   prometheus.NewDesc("pollwarden_quota_waiting_operations", "Operations whose next request waits on a key (shared_quota or provider_incident).", key, nil),
		held:      prometheus.NewDesc("pollwarden_quota_held_seconds", "How long a rate-limit answer still holds every request under a key (0 when not held).", key, nil),
	}
}

func (c *quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.keys, c.limit, c.used, c.remaining, c.waiting, c.held} {
		ch <- d
	}
}

func (c *quotaCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now := c.ops.Clock().Now()
	// The process itself reads, as the phase gauges do: /metrics shows
	// counts and keys, never an operation.
	views, err := c.ops.Quotas(ctx, operations.Caller{Local: true}, now)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.keys, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.keys, prometheus.GaugeValue, float64(len(views)))
	for _, v := range views[:min(len(views), maxQuotaSeries)] {
		gauge := func(d *prometheus.Desc, f float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, f, v.Key)
		}
		gauge(c.limit, float64(v.Limit))
		gauge(c.used, float64(v.Used))
		gauge(c.waiting, float64(v.Waiting))
		held := 0.0
		if v.HeldUntil != nil {
			held = max(0, v.HeldUntil.Sub(now).Seconds())
		}
		gauge(c.held, held)
		if v.Remaining != nil {
			gauge(c.remaining, float64(*v.Remaining))
		}
	}
}
