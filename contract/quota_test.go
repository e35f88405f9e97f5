package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

const quotaSrc = `version: 1
name: gh-runs
status:
  url: "https://api.github.com/runs/{job_id}"
  credential: {header: Authorization, scheme: Bearer, secret: "env:GITHUB_TOKEN"}
state: {path: status, pending: [queued], success: [completed]}
rate_limit:
  when:
    - {status: 403, header: x-ratelimit-remaining, equals: "0"}
  reset: {header: x-ratelimit-reset, unit: unix_seconds}
quota:
  requests: 5000
  per: 1h
  remaining_header: x-ratelimit-remaining
`

func TestQuotaBlock(t *testing.T) {
	c, err := Parse([]byte(quotaSrc))
	if err != nil {
		t.Fatal(err)
	}
	want := pollwarden.QuotaSpec{Requests: 5000, Per: time.Hour, Key: pollwarden.QuotaKeyCredential, RemainingHeader: "x-ratelimit-remaining"}
	if c.Quota == nil || *c.Quota != want {
		t.Fatalf("quota %+v, want %+v", c.Quota, want)
	}
	// The key is the credential's reference, never the secret.
	if k := pollwarden.QuotaKey(c); k != "env:GITHUB_TOKEN" {
		t.Errorf("key %q, want env:GITHUB_TOKEN", k)
	}
	// key: contract keeps the quota to this contract.
	c2, err := Parse([]byte(quotaSrc + "  key: contract\n"))
	if err != nil || pollwarden.QuotaKey(c2) != "gh-runs" {
		t.Fatalf("key: contract: %v, %q", err, pollwarden.QuotaKey(c2))
	}
	// No credential: the contract's name, with or without a quota block.
	c3, err := Parse([]byte(strings.Replace(rlContract, "name: gh", "name: gh-anon", 1)))
	if err != nil || pollwarden.QuotaKey(c3) != "gh-anon" || c3.Quota != nil {
		t.Fatalf("no credential, no quota: %v, %q, %+v", err, pollwarden.QuotaKey(c3), c3.Quota)
	}
	if sum := Summary(c); !strings.Contains(sum, "quota:      5000 credentialed requests per 1h, shared under key env:GITHUB_TOKEN") {
		t.Errorf("summary does not say the quota:\n%s", sum)
	}
	// The remaining header is one the prober keeps.
	if hs := ResponseHeaders(c); !strings.Contains(strings.Join(hs, ","), "x-ratelimit-remaining") {
		t.Errorf("kept headers %v lack the remaining header", hs)
	}
}

// Each bad value of the quota block is refused with its field named.
func TestQuotaBlockBadInput(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{"quota: {requests: 0, per: 1h}", "quota.requests: must be at least 1, got 0"},
		{"quota: {requests: -5, per: 1h}", "quota.requests: must be at least 1, got -5"},
		{"quota: {requests: 5000000, per: 1h}", "quota.requests: must be at most 1000000, got \"5000000\""},
		{"quota: {requests: lots, per: 1h}", "quota.requests: must be a whole number, got \"lots\""},
		{"quota: {per: 1h}", "quota.requests"},
		{"quota: {requests: 10}", "quota.per"},
		{"quota: {requests: 10, per: -1h}", "quota.per: must be greater than 0, got \"-1h\""},
		{"quota: {requests: 10, per: 0s}", "quota.per: must be greater than 0, got \"0s\""},
		{"quota: {requests: 10, per: 500ms}", "quota.per: must be at least 1s, got \"500ms\""},
		{"quota: {requests: 10, per: 800h}", "quota.per: must be at most 744h (31 days), got \"800h\""},
		{"quota: {requests: 10, per: an hour}", "quota.per: bad duration"},
		{"quota: {requests: 100000, per: 1m}", "quota.requests: 100000 requests per 1m is more than one each 1ms"},
		{"quota: {requests: 10, per: 1h, key: token}", "quota.key: must be credential or contract, got \"token\""},
		{"quota: {requests: 10, per: 1h, remaining_header: \"x remaining\"}", `quota.remaining_header: must be a header name, got "x remaining"`},
		{"quota: {requests: 10, per: 1h, burst: 3}", "quota.burst"},
	} {
		src := strings.Replace(quotaSrc, "quota:\n  requests: 5000\n  per: 1h\n  remaining_header: x-ratelimit-remaining\n", tc.block+"\n", 1)
		_, err := Parse([]byte(src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.block, err, tc.want)
		}
	}
}

// The answer's quota headers: the remaining count as sent, the reset as
// a wait; a reset that is unreadable or not ahead is reported, not used.
func TestQuotaFacts(t *testing.T) {
	c, err := Parse([]byte(quotaSrc))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1377013000, 0)
	f := QuotaFacts(c, map[string]string{"x-ratelimit-remaining": "42", "x-ratelimit-reset": "1377013266"}, now)
	if !f.HasRemaining || f.Remaining != "42" || !f.HasReset || f.ResetIn != 266*time.Second {
		t.Fatalf("facts %+v", f)
	}
	for _, tc := range []struct{ reset, want string }{
		{"1377012000", `x-ratelimit-reset "1377012000" is not after the answer`},
		{"soon", `x-ratelimit-reset "soon": not a unix time`},
	} {
		f := QuotaFacts(c, map[string]string{"x-ratelimit-remaining": "1", "x-ratelimit-reset": tc.reset}, now)
		if f.HasReset || f.ResetProblem != tc.want {
			t.Errorf("reset %s: %+v; want problem %q", tc.reset, f, tc.want)
		}
	}
	if f := QuotaFacts(c, map[string]string{}, now); f.HasRemaining || f.HasReset {
		t.Errorf("no headers: %+v", f)
	}
}

// A quota may be only what the provider counts (remaining_header alone);
// requests and per then go together, and a rate_limit may give its reset
// alone.
func TestQuotaLearnedOnly(t *testing.T) {
	base := strings.Replace(quotaSrc, "quota:\n  requests: 5000\n  per: 1h\n  remaining_header: x-ratelimit-remaining\n", "", 1)
	c, err := Parse([]byte(base + "quota: {remaining_header: x-left}\n"))
	if err != nil || c.Quota == nil || c.Quota.Requests != 0 || c.Quota.RemainingHeader != "x-left" {
		t.Fatalf("remaining_header alone: %+v, %v", c.Quota, err)
	}
	if _, err := Parse([]byte(base + "quota: {requests: 10, remaining_header: x-left}\n")); err == nil || !strings.Contains(err.Error(), "quota.per") {
		t.Errorf("requests without per: %v", err)
	}
	if _, err := Parse([]byte(base + "quota: {key: contract}\n")); err == nil || !strings.Contains(err.Error(), "quota.requests") {
		t.Errorf("a quota with neither a limit nor a remaining header: %v", err)
	}
	reset := strings.Replace(base, "  when:\n    - {status: 403, header: x-ratelimit-remaining, equals: \"0\"}\n", "", 1)
	if c, err := Parse([]byte(reset)); err != nil || c.RateLimit.ResetHeader != "x-ratelimit-reset" {
		t.Errorf("rate_limit with its reset alone: %v", err)
	}
}
