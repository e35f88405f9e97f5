package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

func TestParseDecisionTimes(t *testing.T) {
	c, err := Parse([]byte(minimal + "escalation: {remind_after: 30m, expire_after: 2h, on_expiry: cancel_at_provider}\n" +
		"cancel: {url: \"https://API.Example.com:8443/jobs/{job_id}/cancel\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Escalation
	if e.RemindAfter != 30*time.Minute || e.ExpireAfter != 2*time.Hour || e.OnExpiry != pollwarden.OptionCancel {
		t.Fatalf("escalation %+v", e)
	}
	c, err = Parse([]byte(minimal))
	if err != nil || c.Escalation.RemindAfter != 0 || c.Escalation.ExpireAfter != 0 || c.Escalation.OnExpiry != "" {
		t.Fatalf("defaults: %+v %v; want no reminder, no expiry", c.Escalation, err)
	}
}

func TestParseDecisionTimesProblems(t *testing.T) {
	for _, tc := range []struct{ esc, want string }{
		{"{remind_after: 2h, expire_after: 1h}", "escalation.remind_after: must be shorter than expire_after (1h)"},
		{"{expire_after: 1h, on_expiry: extend}", "escalation.on_expiry: must be abandon or cancel_at_provider, got \"extend\": an expired request never grants more time or requests"},
		{"{expire_after: 1h, on_expiry: cancel_at_provider}", "escalation.on_expiry: cancel_at_provider needs a cancel block"},
		{"{on_expiry: abandon}", "escalation.on_expiry: has no effect without expire_after"},
		{"{expire_after: 0s}", "escalation.expire_after: must be greater than 0"},
		{"{remind_after: soon}", "escalation.remind_after: bad duration"},
	} {
		_, err := Parse([]byte(minimal + "escalation: " + tc.esc + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.esc, err, tc.want)
		}
	}
}
