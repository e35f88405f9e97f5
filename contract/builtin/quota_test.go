package builtin_test

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
)

// The built-ins whose providers document a quota declare it, and those
// that report a remaining count read it (docs/providers.md, "Quotas").
func TestBuiltinQuotas(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		want      pollwarden.QuotaSpec
		reset     string
	}{
		{"github-actions-run", "env:GITHUB_TOKEN", pollwarden.QuotaSpec{Requests: 5000, Per: time.Hour, Key: "credential",
			RemainingHeader: "x-ratelimit-remaining"}, "x-ratelimit-reset"},
		{"anthropic-message-batch", "env:ANTHROPIC_API_KEY", pollwarden.QuotaSpec{Key: "credential",
			RemainingHeader: "anthropic-ratelimit-requests-remaining"}, "anthropic-ratelimit-requests-reset"},
		{"openai-batch", "env:OPENAI_API_KEY", pollwarden.QuotaSpec{Key: "credential",
			RemainingHeader: "x-ratelimit-remaining-requests"}, ""},
	} {
		ex, err := contract.Builtin(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		c := ex.Spec()
		if c.Quota == nil || *c.Quota != tc.want || pollwarden.QuotaKey(c) != tc.key {
			t.Errorf("%s: quota %+v under key %q; want %+v under %q", tc.name, c.Quota, pollwarden.QuotaKey(c), tc.want, tc.key)
		}
		reset := ""
		if c.RateLimit != nil {
			reset = c.RateLimit.ResetHeader
		}
		if reset != tc.reset {
			t.Errorf("%s: reset header %q, want %q", tc.name, reset, tc.reset)
		}
	}
	// Anthropic's reset is RFC 3339: the remaining count is spread until it.
	ex, _ := contract.Builtin("anthropic-message-batch")
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	f := contract.QuotaFacts(ex.Spec(), map[string]string{
		"anthropic-ratelimit-requests-remaining": "49", "anthropic-ratelimit-requests-reset": "2026-05-01T12:00:30Z"}, now)
	if !f.HasRemaining || f.Remaining != "49" || !f.HasReset || f.ResetIn != 30*time.Second {
		t.Errorf("anthropic's quota headers read as %+v", f)
	}
}
