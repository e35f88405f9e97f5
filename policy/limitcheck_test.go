package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

func TestLimitWarnings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		requests int
		base     time.Duration
		max      time.Duration
		deadline time.Duration
		want     string // "" for no warning
	}{
		// The README's contract: 12 requests are spent long before 40 minutes.
		{"budget first", 12, 5 * time.Second, 120 * time.Second, 40 * time.Minute,
			"12 status requests under a 5s–2m backoff last about 8 to 12 minutes; the 40m deadline will never be what stops this operation"},
		// 500 requests at 10s–1m could never be spent within 1 hour.
		{"deadline first", 500, 10 * time.Second, time.Minute, time.Hour,
			"the 1h deadline comes after about 87 to 121 of the 500 status requests under a 10s–1m backoff; the request budget will never be what stops this operation"},
		{"balanced", 40, 5 * time.Second, 120 * time.Second, time.Hour, ""},
		{"one request", 1, 5 * time.Second, 120 * time.Second, time.Hour, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &pollwarden.ContractSpec{
				Backoff: pollwarden.Backoff{Base: tc.base, Max: tc.max},
				Limits:  pollwarden.Limits{Deadline: tc.deadline, MaxStatusRequests: tc.requests},
			}
			got := LimitWarnings(c)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("want no warning, got %q", got)
				}
				return
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
				t.Fatalf("got %q\nwant one starting %q", got, tc.want)
			}
		})
	}
}

func TestBudgetSpanUsesTheSchedule(t *testing.T) {
	b := pollwarden.Backoff{Base: 5 * time.Second, Max: 120 * time.Second}
	lo, hi := BudgetSpan(b, 12)
	var want time.Duration
	for k := 1; k < 12; k++ {
		want += Delay(b, k, FactorMax)
	}
	if hi != want || lo >= hi {
		t.Fatalf("BudgetSpan = %s, %s; want longest %s above shortest", lo, hi, want)
	}
}
