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
		[]string{"phase"}, nil)})
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
