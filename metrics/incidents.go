package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pollwarden/pollwarden/operations"
)

// incidentCollector reads the open provider incidents on each scrape:
// like the phase gauge, only the store knows every process's incidents.
// The series are per quota key, for the open incidents only (at most
// operations.MaxIncidentGauges), so their number stays bounded; a key
// with none open has no series.
type incidentCollector struct {
	read       func(context.Context) ([]operations.IncidentGauge, error)
	open, held *prometheus.Desc
}

// RegisterIncidents defines the incident gauges on reg, read by read
// (operations.Reader.IncidentGauges) at each scrape.
func RegisterIncidents(reg prometheus.Registerer, read func(context.Context) ([]operations.IncidentGauge, error)) {
	reg.MustRegister(&incidentCollector{read: read,
		open: prometheus.NewDesc("pollwarden_incidents_open",
			"Open provider incidents, by quota key and kind (outage, credential), read from the store at scrape time.",
			[]string{"key", "kind"}, nil),
		held: prometheus.NewDesc("pollwarden_incident_held_operations",
			"Operations an open provider incident holds now, by quota key (each incident's count stops at 10000).",
			[]string{"key"}, nil),
	})
}

func (c *incidentCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.open; ch <- c.held }

func (c *incidentCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gauges, err := c.read(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.open, err)
		return
	}
	type kk struct{ key, kind string }
	open, held := map[kk]int{}, map[string]int{}
	for _, g := range gauges {
		open[kk{g.Key, string(g.Kind)}]++
		held[g.Key] += g.Held
	}
	for k, n := range open {
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(n), k.key, k.kind)
	}
	for k, n := range held {
		ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(n), k)
	}
}
