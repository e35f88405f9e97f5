package contract

import (
	"strings"
	"testing"
)

// TestPropagateTrace: status.propagate_trace is off unless set to true,
// and a value that is not a boolean is refused by name.
func TestPropagateTrace(t *testing.T) {
	with := func(v string) string {
		return strings.Replace(minimal, "  url: https://", "  propagate_trace: "+v+"\n  url: https://", 1)
	}
	c, err := Parse([]byte(with("true")))
	if err != nil || !c.Status.PropagateTrace {
		t.Fatalf("propagate_trace: true gave %v, %v", c, err)
	}
	if !strings.Contains(Summary(c), "trace: the W3C traceparent goes with each status and cancel request") {
		t.Errorf("contract check does not say the trace is propagated:\n%s", Summary(c))
	}
	off, err := Parse([]byte(minimal))
	if err != nil || off.Status.PropagateTrace {
		t.Fatalf("a contract without the key propagates (%v)", err)
	}
	if strings.Contains(Summary(off), "traceparent") {
		t.Errorf("contract check speaks of a trace the contract does not send:\n%s", Summary(off))
	}
	_, err = Parse([]byte(with("yes please")))
	if err == nil || !strings.Contains(err.Error(), "propagate_trace") || !strings.Contains(err.Error(), "must be true or false") {
		t.Fatalf("a non-boolean propagate_trace: %v", err)
	}
}
