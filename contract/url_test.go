package contract

import (
	"errors"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

func TestStatusURL(t *testing.T) {
	tests := []struct {
		name, tmpl, job, want string
	}{
		{"plain", "https://api.example.com/v1/jobs/{job_id}", "exp_71c", "https://api.example.com/v1/jobs/exp_71c"},
		{"slash escaped", "https://api.example.com/v1/jobs/{job_id}", "a/../b", "https://api.example.com/v1/jobs/a%2F..%2Fb"},
		{"query chars escaped", "https://api.example.com/v1/jobs/{job_id}", "x?y#z", "https://api.example.com/v1/jobs/x%3Fy%23z"},
		{"in query", "https://api.example.com/v1/status?id={job_id}", "a&b=c d", "https://api.example.com/v1/status?id=a%26b%3Dc+d"},
		{"twice", "https://api.example.com/{job_id}/x/{job_id}", "j 1", "https://api.example.com/j%201/x/j%201"},
		{"no placeholder", "https://api.example.com/v1/the-job", "j1", "https://api.example.com/v1/the-job"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := specContract()
			c.Status.URL = tc.tmpl
			got, err := StatusURL(c, tc.job)
			if err != nil || got != tc.want {
				t.Errorf("StatusURL(%q) = %q, %v; want %q", tc.job, got, err, tc.want)
			}
		})
	}
	for _, job := range []string{"", ".", ".."} {
		if got, err := StatusURL(specContract(), job); err == nil || !errors.Is(err, pollwarden.ErrInvalid) {
			t.Errorf("StatusURL(%q) = %q, %v; want an ErrInvalid", job, got, err)
		}
	}
}

func TestCheckHost(t *testing.T) {
	c := specContract()
	c.Status.AllowedHosts = []string{"api.example.com", "dl.example.com"}
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://api.example.com/v1/jobs/1", true},
		{"https://API.EXAMPLE.COM:8443/x", true},
		{"http://dl.example.com./x", true},
		{"https://evil.example.com/x", false},
		{"https://api.example.com.evil.net/x", false},
		{"https://evil.net/api.example.com", false},
		{"https://user:pw@api.example.com/x", false},
		{"ftp://api.example.com/x", false},
		{"/v1/jobs/1", false},
		{"api.example.com/v1", false},
		{"https://", false},
		{"::not a url", false},
	}
	for _, tc := range tests {
		err := CheckHost(c, tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("CheckHost(%q) = %v, want ok=%v", tc.url, err, tc.ok)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("CheckHost echoes user info: %v", err)
		}
	}
	// A hand-built contract without allowed_hosts allows its URL's host.
	bare := &pollwarden.Contract{Status: pollwarden.StatusCall{URL: "https://api.example.com/{job_id}"}}
	if err := CheckHost(bare, "https://api.example.com/j"); err != nil {
		t.Errorf("bare contract: %v", err)
	}
	if err := CheckHost(bare, "https://other.example.com/j"); err == nil {
		t.Error("bare contract allowed another host")
	}
}

func TestSummary(t *testing.T) {
	got := Summary(specContract())
	for _, want := range []string{
		"contract report-export",
		"GET https://api.example.com/v1/jobs/{job_id}",
		"env:EXPORT_API_TOKEN in header Authorization",
		"pending:   queued, running, processing",
		"success:   succeeded",
		"failure:   failed",
		"cancelled: cancelled",
		"expired:   expired",
		"any other value stops (unknown_state)",
		"result.url (url)",
		"base 5s, max 2m",
		"deadline 40m, 12 status requests, 3 transport failures, 3 rate-limited answers",
		"15m with 4 more checks",
		"cancel:     POST https://api.example.com/v1/jobs/{job_id}/cancel",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	c := specContract()
	if strings.Contains(got, "ceiling:") {
		t.Errorf("summary shows a ceiling the contract does not set:\n%s", got)
	}
	c.Cancel, c.Status.Credential, c.State.UnlistedPending = nil, nil, true
	c.Limits.MaxRequestsPerSecond = 2.5
	got = Summary(c)
	for _, want := range []string{"cancel:     not documented", "credential: none", "counts as pending",
		"ceiling:    2.5 status requests per second to this provider, per process"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}
