package contract

import (
	"strings"
	"testing"
	"time"
)

const rlContract = `version: 1
name: gh
status: {url: "https://api.github.com/runs/{job_id}"}
state: {path: status, pending: [queued], success: [completed]}
rate_limit:
  when:
    - {status: 403, header: x-ratelimit-remaining, equals: "0"}
    - {status: 403, header: retry-after}
  reset: {header: x-ratelimit-reset, unit: unix_seconds}
`

func TestRateLimitSignals(t *testing.T) {
	c, err := Parse([]byte(rlContract))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		status  int
		headers map[string]string
		want    string
	}{
		{403, map[string]string{"x-ratelimit-remaining": "0"}, "403 with x-ratelimit-remaining 0"},
		{403, map[string]string{"x-ratelimit-remaining": "4999"}, ""},
		{403, map[string]string{"x-ratelimit-remaining": "4999", "retry-after": "3"}, "403 with retry-after"},
		{401, map[string]string{"x-ratelimit-remaining": "0"}, ""},
		{403, nil, ""},
	} {
		if got := RateLimited(c, tc.status, tc.headers); got != tc.want {
			t.Errorf("RateLimited(%d, %v) = %q, want %q", tc.status, tc.headers, got, tc.want)
		}
	}
	now := time.Unix(1377013000, 0)
	if got := ResetAfter(c, map[string]string{"x-ratelimit-reset": "1377013266"}, now); got != "Tue, 20 Aug 2013 15:41:06 GMT" {
		t.Errorf("ResetAfter = %q", got)
	}
	if got := ResetAfter(c, map[string]string{"x-ratelimit-reset": "1377013266"}, now.Add(time.Hour)); got != "0" {
		t.Errorf("a reset in the past: %q", got)
	}
	if got := ResetAfter(c, map[string]string{"x-ratelimit-reset": "soon"}, now); got != "" {
		t.Errorf("an unreadable reset: %q", got)
	}
	_, err = Parse([]byte(strings.Replace(rlContract, "status: 403, header: retry-after", "status: 401, header: retry-after", 1)))
	if err == nil || !strings.Contains(err.Error(), "rate_limit.when[1].status: a rate limit is signalled with 400, 403, 429 or 503, got 401") {
		t.Fatalf("401 as a rate limit: %v", err)
	}
}

// TestRateLimitBodySignals: AWS signals throttling with a 400 whose
// __type names it; Google gives the wait as RetryInfo.retryDelay.
func TestRateLimitBodySignals(t *testing.T) {
	src := `version: 1
name: aws
status: {url: "https://textract.us-east-1.amazonaws.com/", method: POST, safe: true, body: {JobId: "{job_id}"}}
state: {path: JobStatus, pending: [IN_PROGRESS], success: [SUCCEEDED]}
rate_limit:
  when:
    - {status: 400, path: "__type", equals: ThrottlingException}
    - {status: 400, path: "__type", equals: ProvisionedThroughputExceededException}
  retry_after: {path: "error.details[0].retryDelay", unit: duration}
`
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 0)
	why, _ := ex.RateLimit(400, nil, []byte(`{"__type":"ThrottlingException","message":"Rate exceeded"}`), now)
	if why != `400 with "__type" "ThrottlingException"` {
		t.Fatalf("throttling 400: %q", why)
	}
	if why, _ := ex.RateLimit(400, nil, []byte(`{"__type":"InvalidJobIdException"}`), now); why != "" {
		t.Fatalf("another 400 is no rate limit: %q", why)
	}
	if why, _ := ex.RateLimit(400, nil, []byte(`not json`), now); why != "" {
		t.Fatalf("a body that is not JSON: %q", why)
	}
	if _, wait := ex.RateLimit(429, nil, []byte(`{"error":{"details":[{"retryDelay":"52.2s"}]}}`), now); wait != "53" {
		t.Fatalf("retry_after from the body: %q", wait)
	}
	_, err = Parse([]byte(strings.Replace(src, `path: "__type", equals: ThrottlingException`, `header: x-a, path: "__type"`, 1)))
	if err == nil || !strings.Contains(err.Error(), "give exactly one of header") {
		t.Fatalf("a signal with both header and path: %v", err)
	}
}
