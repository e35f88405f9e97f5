package sim

import (
	"math"
	"slices"
	"time"
)

// Result is what one strategy did in one run. The first fields are the
// fixed JSON of the specification; the rest are extra.
type Result struct {
	Name           string  `json:"name"`
	RequestsPerJob float64 `json:"requests_per_job"`
	LagP50         float64 `json:"lag_p50_s"`
	LagP99         float64 `json:"lag_p99_s"`
	// Burstiness is the largest ratio of a 1 s bin's count to its 30 s
	// centred moving average, over the scenario's bins (see Config); 0
	// when no bin reached the noise floor (then BurstinessBins is 0).
	Burstiness           float64 `json:"burstiness"`
	RetryAfterViolations int64   `json:"retry_after_violations"`
	// StoppedByLimit is the share of jobs (0..1) that ended on a deadline
	// or a budget without their end being observed.
	StoppedByLimit float64 `json:"stopped_by_limit"`

	Requests       int64   `json:"requests"`
	Detected       int     `json:"detected"`
	LagMean        float64 `json:"lag_mean_s"`
	LagMax         float64 `json:"lag_max_s"`
	PeakRate       int     `json:"peak_rate"`
	PeakAt         int     `json:"peak_at_s"`
	MeanRate       float64 `json:"mean_rate"`
	BurstinessAt   int     `json:"burstiness_at_s"`
	BurstinessBins int     `json:"burstiness_bins"`
	// BurstinessWithDowntime is the same measure with the controller's
	// down time counted as silent seconds in the moving average (restart
	// only): a perfectly even restart then scores about 2.
	BurstinessWithDowntime float64        `json:"burstiness_with_downtime,omitempty"`
	Answers503             int64          `json:"answers_503"`
	Answers429             int64          `json:"answers_429"`
	StopReasons            map[string]int `json:"stop_reasons,omitempty"`
	// The fleet scenario's measures: requests the provider saw beyond
	// its quota in a sliding window of its length, the notifications a
	// person would get (an escalation or an incident opened, each one),
	// those the outage caused, and the incidents opened.
	OverQuota           *int64 `json:"over_quota,omitempty"`
	Notifications       *int64 `json:"notifications,omitempty"`
	OutageNotifications *int64 `json:"notifications_per_outage,omitempty"`
	Incidents           *int64 `json:"incidents,omitempty"`

	// Rate is the request count per 1 s bin, for plots.
	Rate []int32 `json:"-"`
}

// result turns an engine's counters into a Result.
func (e *engine) result(name string) Result {
	n := len(e.pop.start)
	r := Result{
		Name:                 name,
		Requests:             e.requests,
		RequestsPerJob:       float64(e.requests) / float64(n),
		RetryAfterViolations: e.violations,
		Detected:             len(e.lags),
		Answers503:           e.unavailable,
		Answers429:           e.limited,
		Rate:                 e.bins,
	}
	if e.cfg.QuotaRequests > 0 {
		r.OverQuota, r.Notifications, r.OutageNotifications, r.Incidents = &e.overQuota, &e.notifications, &e.outageNotes, &e.incidents
	}
	stopped := 0
	for _, v := range e.stopped {
		stopped += v
	}
	if stopped > 0 {
		r.StopReasons = e.stopped
	}
	r.StoppedByLimit = float64(stopped) / float64(n)
	if len(e.lags) > 0 {
		lags := slices.Clone(e.lags)
		slices.Sort(lags)
		r.LagP50, r.LagP99 = quantile(lags, 0.50), quantile(lags, 0.99)
		r.LagMax = lags[len(lags)-1]
		sum := 0.0
		for _, l := range lags {
			sum += l
		}
		r.LagMean = sum / float64(len(lags))
	}
	up := e.upBins()
	active := 0
	for b, c := range e.bins {
		if up(b) {
			active++
		}
		if int(c) > r.PeakRate {
			r.PeakRate, r.PeakAt = int(c), b
		}
	}
	if active > 0 {
		r.MeanRate = float64(e.requests) / float64(active)
	}
	r.Burstiness, r.BurstinessAt, r.BurstinessBins = burstiness(e.bins, up, e.cfg.BurstFrom, e.cfg.BurstBins, e.cfg.BurstFloor)
	if e.cfg.DownEnd > e.cfg.DownStart {
		all := func(int) bool { return true }
		r.BurstinessWithDowntime, _, _ = burstiness(e.bins, all, e.cfg.BurstFrom, e.cfg.BurstBins, e.cfg.BurstFloor)
	}
	return r
}

// upBins reports whether the controller was running during bin b.
func (e *engine) upBins() func(int) bool {
	d0 := int(e.cfg.DownStart / time.Second)
	d1 := int(e.cfg.DownEnd / time.Second)
	return func(b int) bool { return b < d0 || b >= d1 }
}

// quantile is the nearest-rank quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// BurstWindow is the width of the centred moving average, in 1 s bins.
const BurstWindow = 30

// burstiness is max over bins b in [from, from+count) (count 0: to the
// last bin) of bins[b] / MA(b), where MA(b) is the mean of the bins
// [b−15, b+15) during which the controller was running (up), clipped to
// the run. Bins with MA below floor are left out. It returns the maximum,
// the bin where it occurs, and how many bins were compared.
func burstiness(bins []int32, up func(int) bool, from, count int, floor float64) (float64, int, int) {
	n := len(bins)
	sum := make([]int64, n+1) // prefix sums over up bins
	cnt := make([]int, n+1)
	for i, c := range bins {
		sum[i+1], cnt[i+1] = sum[i], cnt[i]
		if up(i) {
			sum[i+1] += int64(c)
			cnt[i+1]++
		}
	}
	to := n
	if count > 0 {
		to = min(n, from+count)
	}
	best, bestAt, compared := 0.0, 0, 0
	for b := max(from, 0); b < to; b++ {
		if !up(b) {
			continue
		}
		lo, hi := max(0, b-BurstWindow/2), min(n, b+BurstWindow/2)
		k := cnt[hi] - cnt[lo]
		if k == 0 {
			continue
		}
		ma := float64(sum[hi]-sum[lo]) / float64(k)
		if ma < floor || ma == 0 {
			continue
		}
		compared++
		if v := float64(bins[b]) / ma; v > best {
			best, bestAt = v, b
		}
	}
	return best, bestAt, compared
}
