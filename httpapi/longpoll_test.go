package httpapi

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	fp "github.com/pollwarden/pollwarden/internal/fakeprovider"
)

// TestLongPollWakesOnChange: a held GET answers promptly after the phase
// changes. The store recheck is set to an hour, so only the controller's
// OnChange → Changes.Publish can wake it; the SPEC's 100 ms is logged,
// the assertion allows 1 s so that a loaded machine does not fail it.
func TestLongPollWakesOnChange(t *testing.T) {
	r := newRigWith(t, rigOptions{recheck: time.Hour})
	r.fp.Script("j", fp.State("running", nil))
	r.create("op-lp", "j", nil)

	var changedAt atomic.Int64
	r.setHook(func(op *pollwarden.Operation) {
		if op.ID == "op-lp" && op.Phase != pollwarden.PhaseWaiting {
			changedAt.CompareAndSwap(0, time.Now().UnixNano())
		}
	})
	type result struct {
		a  answer
		at time.Time
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		a := r.do("GET", "/v1/operations/op-lp?wait=20s", agentToken, nil)
		done <- result{a, time.Now()}
	}()
	// Change the phase only once the long-poll is listening.
	for r.changes.Watched() == 0 {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the long-poll never subscribed")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case res := <-done:
		t.Fatalf("answered before any change: %d %s", res.a.status, res.a.body)
	default:
	}
	r.fp.Script("j", fp.Succeeded("https://files.example.com/r.csv"))
	r.drive("op-lp")

	var res result
	select {
	case res = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the long-poll did not answer after the phase changed")
	}
	if res.a.status != http.StatusOK || res.a.json(t)["phase"] != "succeeded" {
		t.Fatalf("answer %d %s", res.a.status, res.a.body)
	}
	lag := res.at.Sub(time.Unix(0, changedAt.Load()))
	t.Logf("answered %s after the phase change", lag)
	if changedAt.Load() == 0 || lag > time.Second {
		t.Errorf("answered %s after the change, want well under 1s (SPEC: 100 ms)", lag)
	}
}

// TestLongPollTimesOut: without a phase change the answer is held for the
// whole wait, then gives the record as it stands.
func TestLongPollTimesOut(t *testing.T) {
	r := newRig(t)
	r.fp.Script("j", fp.State("running", nil))
	r.create("op-lp", "j", nil)
	const wait = 300 * time.Millisecond
	start := time.Now()
	a := r.do("GET", "/v1/operations/op-lp?wait=300ms", agentToken, nil)
	held := time.Since(start)
	if a.status != http.StatusOK || a.json(t)["phase"] != "waiting" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if held < wait {
		t.Errorf("answered after %s, before the wait of %s", held, wait)
	}
	if held > 10*time.Second {
		t.Errorf("held %s for a wait of %s", held, wait)
	}
}

// TestLongPollSeesOtherProcesses: a change the handler is not told about
// (another process's) is still seen on the periodic re-read.
func TestLongPollSeesOtherProcesses(t *testing.T) {
	r := newRigWith(t, rigOptions{recheck: 20 * time.Millisecond})
	r.fp.Script("j", fp.State("running", nil))
	r.create("op-lp", "j", nil)
	go func() {
		time.Sleep(50 * time.Millisecond)
		op := r.stored("op-lp")
		op.Phase = pollwarden.PhaseFailed
		_ = r.store.OperationSave(context.Background(), pollwarden.SaveParams{Op: op})
	}()
	a := r.do("GET", "/v1/operations/op-lp?wait=20s", agentToken, nil)
	if a.json(t)["phase"] != "failed" {
		t.Fatalf("%s", a.body)
	}
}

func TestLongPollFinalAnswersAtOnce(t *testing.T) {
	r := newRig(t)
	r.fp.Script("j", fp.Succeeded("https://files.example.com/r.csv"))
	r.create("op-done", "j", nil)
	r.settle("op-done")
	start := time.Now()
	a := r.do("GET", "/v1/operations/op-done?wait=60s", agentToken, nil)
	if a.status != http.StatusOK || a.json(t)["phase"] != "succeeded" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a finished operation was held %s", d)
	}
}

func TestLongPollBadWait(t *testing.T) {
	r := newRig(t)
	r.create("op", "j", nil)
	for _, w := range []string{"soon", "-1s", "30"} {
		if a := r.do("GET", "/v1/operations/op?wait="+w, agentToken, nil); a.status != http.StatusUnprocessableEntity {
			t.Errorf("wait=%s: %d", w, a.status)
		}
	}
	if a := r.do("GET", "/v1/operations/nope?wait=5s", agentToken, nil); a.status != http.StatusNotFound || a.errorCode(t) != codeNotFound {
		t.Errorf("unknown op: %d %s", a.status, a.body)
	}
	if n := r.changes.Watched(); n != 0 {
		t.Errorf("%d subscriptions left behind", n)
	}
}
