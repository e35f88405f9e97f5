package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Target is one goal of the issue "Performance: prove the schedule",
// checked on one run for pollwarden (and for the experimental strategy
// when it ran).
type Target struct {
	Strategy string  `json:"strategy"`
	Name     string  `json:"name"`
	Value    float64 `json:"value"`
	Limit    float64 `json:"limit"`
	Met      bool    `json:"met"`
	// NotMeasurable is set when the run had too little traffic to check
	// the target (burstiness under the noise floor).
	NotMeasurable bool   `json:"not_measurable,omitempty"`
	Note          string `json:"note,omitempty"`
}

// The burstiness limits of the issue.
const (
	HerdBurstLimit    = 1.5
	RestartBurstLimit = 2.0
)

// The callback scenario's limits when every callback is delivered.
const (
	CallbackRequestsLimit = 2.2
	CallbackLagP99Limit   = 2.0 // seconds
)

// Targets checks the goals on a report. In every scenario: zero
// requests inside a Retry-After window. In the herd (the specification's
// fixed scenario, where the ratios are defined): not dominated (no other
// strategy of the six with both fewer requests per job and a lower lag
// p99); against smithy-waiter at most 1.0× the requests per job and 0.8×
// the lag p99; against fixed-10s at most 0.5× the requests per job;
// burstiness at most 1.5 after the first 30 s. After a restart:
// burstiness at most 2 in the first minute. With callbacks: no worse than
// the same policy deaf to them (requests per job and lag p99), and with
// every callback delivered at most 2.2 requests per job and a lag p99 of
// 2 s.
func Targets(r *Report) []Target {
	var out []Target
	for _, who := range []string{Pollwarden, Proposed} {
		pw, ok := r.Get(who)
		if !ok {
			continue
		}
		add := func(name string, v, limit float64, note string) {
			out = append(out, Target{Strategy: who, Name: name, Value: round3(v), Limit: limit, Met: v <= limit, Note: note})
		}
		add("retry_after_violations", float64(pw.RetryAfterViolations), 0, "")
		if r.Scenario == Herd {
			var dom []string
			for _, s := range r.Strategies {
				if slices.Contains(Standard, s.Name) && s.Name != Pollwarden &&
					s.RequestsPerJob < pw.RequestsPerJob && s.LagP99 < pw.LagP99 {
					dom = append(dom, s.Name)
				}
			}
			note := ""
			if len(dom) > 0 {
				note = "dominated by " + strings.Join(dom, ", ")
			}
			add("dominated_by", float64(len(dom)), 0, note)
			if sw, ok := r.Get(SmithyWaiter); ok {
				add("requests_per_job_vs_smithy_waiter", ratio(pw.RequestsPerJob, sw.RequestsPerJob), 1.0, "")
				add("lag_p99_vs_smithy_waiter", ratio(pw.LagP99, sw.LagP99), 0.8, "")
			}
			if fx, ok := r.Get(Fixed10s); ok {
				add("requests_per_job_vs_fixed_10s", ratio(pw.RequestsPerJob, fx.RequestsPerJob), 0.5, "")
			}
		}
		if r.Scenario == Callback && r.WithoutCallbacks != nil {
			wo := r.WithoutCallbacks
			add("requests_per_job_vs_without_callbacks", ratio(pw.RequestsPerJob, wo.RequestsPerJob), 1.0, "")
			add("lag_p99_vs_without_callbacks", ratio(pw.LagP99, wo.LagP99), 1.0, "")
			if l := r.Params.CallbackLoss; l != nil && *l == 0 {
				add("requests_per_job_every_callback_delivered", pw.RequestsPerJob, CallbackRequestsLimit, "")
				add("lag_p99_s_every_callback_delivered", pw.LagP99, CallbackLagP99Limit, "")
			}
		}
		limit, name := 0.0, ""
		switch r.Scenario {
		case Herd:
			limit, name = HerdBurstLimit, "burstiness_after_30s"
		case Restart:
			limit, name = RestartBurstLimit, "burstiness_first_minute_after_restart"
		}
		if name != "" {
			if pw.BurstinessBins == 0 {
				out = append(out, Target{Strategy: who, Name: name, Limit: limit, NotMeasurable: true,
					Note: fmt.Sprintf("not measurable: no 1 s bin with a 30 s average of at least %g requests/s (raise --n)", r.Params.BurstFloor)})
			} else {
				add(name, pw.Burstiness, limit, fmt.Sprintf("at %d s, over %d bins", pw.BurstinessAt, pw.BurstinessBins))
			}
		}
	}
	return out
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
