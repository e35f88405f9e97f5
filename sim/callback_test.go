package sim

import (
	"reflect"
	"testing"
)

// TestCallbackAllLostIsTheHerd: with every callback lost the callback
// scenario is the herd: every strategy, pollwarden included, gives the
// herd's figures for the same seed, and pollwarden equals its deaf
// reference, so losing every callback costs nothing.
func TestCallbackAllLostIsTheHerd(t *testing.T) {
	c := mustConfig(t, Callback, 1500, 5)
	c.CallbackLoss = 1
	lost := mustRun(t, c)
	herd := mustRun(t, mustConfig(t, Herd, 1500, 5))
	if !reflect.DeepEqual(lost.Strategies, herd.Strategies) {
		t.Error("with every callback lost, the strategies differ from the herd's")
	}
	if pw := mustGet(t, lost, Pollwarden); !reflect.DeepEqual(pw, *lost.WithoutCallbacks) {
		t.Errorf("pollwarden %+v, deaf to callbacks %+v", pw, *lost.WithoutCallbacks)
	}
	for _, tg := range lost.Targets {
		if !tg.Met {
			t.Errorf("target %s missed with every callback lost: %v > %v", tg.Name, tg.Value, tg.Limit)
		}
	}
}

// TestCallbackDelivered: with every callback delivered pollwarden sees
// each end when its callback comes (lag about the callback's delay) and,
// once it trusts the callbacks, polls only as a safety net: far fewer
// requests than when deaf to them. The baselines ignore callbacks.
func TestCallbackDelivered(t *testing.T) {
	r := mustRun(t, mustConfig(t, Callback, 3000, 2))
	herd := mustRun(t, mustConfig(t, Herd, 3000, 2))
	pw, wo := mustGet(t, r, Pollwarden), *r.WithoutCallbacks
	if pw.Detected != 3000 || pw.RetryAfterViolations != 0 {
		t.Fatalf("pollwarden detected %d of 3000, %d Retry-After violations", pw.Detected, pw.RetryAfterViolations)
	}
	if pw.RequestsPerJob > 0.7*wo.RequestsPerJob || pw.LagP50 > 2 || pw.LagP99 > 0.3*wo.LagP99 {
		t.Errorf("with callbacks %.2f req/job, lag p50 %.1f s, p99 %.1f s; deaf %.2f, %.1f s, %.1f s",
			pw.RequestsPerJob, pw.LagP50, pw.LagP99, wo.RequestsPerJob, wo.LagP50, wo.LagP99)
	}
	if hw := mustGet(t, herd, Pollwarden); !reflect.DeepEqual(hw, wo) {
		t.Error("the deaf reference is not the herd's pollwarden")
	}
	for _, name := range Standard[1:] {
		if a, b := mustGet(t, r, name), mustGet(t, herd, name); !reflect.DeepEqual(a, b) {
			t.Errorf("%s acted on callbacks", name)
		}
	}
}

func TestCallbackLossIsChecked(t *testing.T) {
	for _, loss := range []float64{-0.1, 1.5} {
		c := mustConfig(t, Callback, 10, 1)
		c.CallbackLoss = loss
		if _, err := Run(c); err == nil {
			t.Errorf("callback loss %v accepted", loss)
		}
	}
	c := mustConfig(t, Herd, 10, 1)
	c.CallbackLoss = 0.5
	if _, err := Run(c); err == nil {
		t.Error("a callback loss outside the callback scenario was accepted")
	}
}
