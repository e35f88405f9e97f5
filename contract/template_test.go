package contract

import (
	"strings"
	"testing"
)

func TestCheckTemplate(t *testing.T) {
	for _, tc := range []struct{ tmpl, origin, problem string }{
		{"https://api.example.com/v1/jobs/{job_id}", "https://api.example.com", ""},
		{"https://api.example.com:8443/v1/{+job_id}:cancel", "https://api.example.com:8443", ""},
		{"https://api.example.com{/job_id}", "https://api.example.com", ""},
		{"https://api.example.com/v1/status{?job_id}", "https://api.example.com", ""},
		{"http://[::1]:9000/jobs/{job_id}", "http://[::1]:9000", ""},
		{"https://API.Example.com.:443/x", "https://api.example.com", ""},
		{"https://{job_id}.example.com/x", "", "may not set the scheme, host or port"},
		{"https://api.example.com:{job_id}/x", "", "may not set the scheme, host or port"},
		{"https://api.example.com{+job_id}", "", "may not set the scheme, host or port"},
		{"https://api.example.com{.job_id}/x", "", "may not set the scheme, host or port"},
		{"{+job_id}/v1/x", "", "must be an absolute http or https URL"},
		{"{job_id}://api.example.com/x", "", "may not set the scheme, host or port"},
		{"https://api.example.com/{owner}/x", "", "unknown variable {owner}"},
		{"https://api.example.com:0/x", "", "port 0"},
		{"https://api.example.com:65536/x", "", "out of range"},
		{"https://u:p@api.example.com/x", "", "user credentials"},
		{"https://api.example.com/{job_id", "", "unclosed"},
		{"ftp://api.example.com/x", "", "absolute http or https"},
	} {
		o, msg := checkTemplate(tc.tmpl, jobIDVar)
		switch {
		case tc.problem == "" && (msg != "" || o.String() != tc.origin):
			t.Errorf("checkTemplate(%q) = %s, %q; want origin %s", tc.tmpl, o, msg, tc.origin)
		case tc.problem != "" && !strings.Contains(msg, tc.problem):
			t.Errorf("checkTemplate(%q) = %q; want a problem with %q", tc.tmpl, msg, tc.problem)
		}
		if strings.Contains(msg, "u:p") {
			t.Errorf("checkTemplate echoes user info: %q", msg)
		}
	}
}
