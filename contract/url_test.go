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
		{"in query", "https://api.example.com/v1/status?id={job_id}", "a&b=c d", "https://api.example.com/v1/status?id=a%26b%3Dc%20d"},
		{"query operator", "https://api.example.com/v1/status{?job_id}", "run-q&force=true&all=1", "https://api.example.com/v1/status?job_id=run-q%26force%3Dtrue%26all%3D1"},
		{"reserved keeps slashes", "https://api.example.com/v1/{+job_id}", "projects/p/locations/l/operations/o", "https://api.example.com/v1/projects/p/locations/l/operations/o"},
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
	// {+…} keeps "/" but not a dot segment, nor a "?" or "#" that would
	// end the path and start a query of the value's choosing.
	plus := specContract()
	plus.Status.URL = "https://api.example.com/v1/{+job_id}/status"
	for _, job := range []string{"a/../admin", "./x", "x?force=true", "x#y",
		// Percent-encoded dot segments: servers decode them before
		// resolving the path.
		"%2e%2e/admin", ".%2e/admin", "a/%2E%2E/admin", "%2e/x", "a/..%2fadmin", "a/%2e%2e%5cadmin", `a/..\admin`} {
		if got, err := StatusURL(plus, job); err == nil || !errors.Is(err, pollwarden.ErrInvalid) {
			t.Errorf("StatusURL({+job_id}, %q) = %q, %v; want an ErrInvalid", job, got, err)
		}
	}
	// Dots that are not a whole segment, and escapes that decode to
	// something else, stay allowed.
	for _, job := range []string{"a/..b/c", "v1.2/x", "a/%2e%2ex/c", "a/%41/b"} {
		if _, err := StatusURL(plus, job); err != nil {
			t.Errorf("StatusURL({+job_id}, %q): %v; want it allowed", job, err)
		}
	}
}

func TestCancelURL(t *testing.T) {
	c := specContract()
	got, err := CancelURL(c, "run-q&force=true&all=1")
	if want := "https://api.example.com/v1/jobs/run-q%26force%3Dtrue%26all%3D1/cancel"; err != nil || got != want {
		t.Errorf("CancelURL = %q, %v; want %q", got, err, want)
	}
	c.Cancel.URL = "https://api.example.com/v1/cancel?id={job_id}"
	got, err = CancelURL(c, "run-q&force=true&all=1")
	if want := "https://api.example.com/v1/cancel?id=run-q%26force%3Dtrue%26all%3D1"; err != nil || got != want {
		t.Errorf("CancelURL in query = %q, %v; want %q", got, err, want)
	}
	if _, err := CancelURL(c, ""); err == nil || !strings.Contains(err.Error(), "{job_id}") {
		t.Errorf("CancelURL without a job id = %v; want a refusal naming {job_id}", err)
	}
	c.Cancel.URL = "https://other.example.com/v1/cancel/{job_id}"
	if _, err := CancelURL(c, "j1"); err == nil || !strings.Contains(err.Error(), "not an allowed origin") {
		t.Errorf("CancelURL to another origin = %v; want a refusal", err)
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
