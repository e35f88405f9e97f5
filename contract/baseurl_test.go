package contract

import (
	"strings"
	"testing"
)

const baseContract = `version: 1
name: gw
base_url: "https://gateway.example.com/openai/"
status:
  url: "/v1/batches/{job_id}"
  allowed_hosts: [files.example.com]
state: {path: status, pending: [in_progress], success: [completed]}
cancel: {url: "/v1/batches/{job_id}/cancel"}
escalation: {console_url: "https://platform.example.com/batches/{job_id}"}
`

// TestBaseURLResolvesPathTemplates: every template written as a path goes
// under base_url (prefix kept), and base_url is the first allowed origin.
func TestBaseURLResolvesPathTemplates(t *testing.T) {
	c, err := Parse([]byte(baseContract))
	if err != nil {
		t.Fatal(err)
	}
	got, err := StatusURL(c, "b_1")
	if want := "https://gateway.example.com/openai/v1/batches/b_1"; err != nil || got != want {
		t.Fatalf("StatusURL = %q, %v; want %q", got, err, want)
	}
	got, err = CancelURL(c, "b_1")
	if want := "https://gateway.example.com/openai/v1/batches/b_1/cancel"; err != nil || got != want {
		t.Fatalf("CancelURL = %q, %v; want %q", got, err, want)
	}
	origins := AllowedOrigins(c)
	if len(origins) != 2 || origins[0].String() != "https://gateway.example.com" || origins[1].String() != "https://files.example.com" {
		t.Fatalf("AllowedOrigins = %v", origins)
	}
	if c.Escalation.ConsoleURL != "https://platform.example.com/batches/{job_id}" {
		t.Fatalf("a full console URL is kept: %q", c.Escalation.ConsoleURL)
	}
}

func TestBaseURLProblems(t *testing.T) {
	for name, tc := range map[string]struct{ base, url, want string }{
		"variable in base": {"https://{host}", "/x/{job_id}", "base_url: may not hold a template variable"},
		"not http":         {"ftp://h", "/x/{job_id}", "base_url: not an absolute http or https URL"},
		"query":            {"https://h/?a=b", "/x/{job_id}", "base_url: may not have a query"},
		"userinfo":         {"https://u:p@h", "/x/{job_id}", "base_url: URL carries user credentials"},
		"bad port":         {"https://h:0", "/x/{job_id}", "base_url: port 0"},
		"double slash":     {"https://h", "//evil.example.com/{job_id}", "status.url: a template starting with // would name a host"},
	} {
		t.Run(name, func(t *testing.T) {
			src := "version: 1\nname: b\nbase_url: \"" + tc.base + "\"\nstatus: {url: \"" + tc.url + "\"}\nstate: {path: s, pending: [a], success: [b]}\n"
			_, err := Parse([]byte(src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v; want %q", err, tc.want)
			}
			if strings.Contains(tc.want, "base_url") && strings.Contains(err.Error(), "status.url") {
				t.Errorf("a bad base_url is also blamed on status.url: %v", err)
			}
		})
	}
}
