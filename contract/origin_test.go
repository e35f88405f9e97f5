package contract

import (
	"errors"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

func TestCheckOrigin(t *testing.T) {
	c := specContract()
	c.Status.AllowedHosts = []string{"api.example.com", "dl.example.com", "https://files.example.com:8443", "http://[::1]:9000"}
	tests := []struct {
		url, want string // want "" means allowed, else a piece of the refusal
	}{
		{"https://api.example.com/v1/jobs/1", ""},
		{"https://api.example.com:443/v1/jobs/1", ""},
		{"HTTPS://API.EXAMPLE.COM/x", ""},
		{"https://dl.example.com./x", ""},
		{"https://files.example.com:8443/f", ""},
		{"http://[::1]:9000/x", ""},
		{"https://api.example.com:8443/x", "port or scheme is not allowed"},
		{"http://api.example.com/x", "unencrypted"},
		{"http://api.example.com:443/x", "unencrypted"},
		{"https://files.example.com/f", "port or scheme"},
		{"https://evil.example.com/x", "host is not allowed"},
		{"https://api.example.com.evil.net/x", "host is not allowed"},
		{"https://evil.net/api.example.com", "host is not allowed"},
		{"https://user:pw@api.example.com/x", "user credentials"},
		{"https://api.example.com:0/x", "port 0"},
		{"https://api.example.com:99999/x", "out of range"},
		{"https://api.example.com:65536/x", "out of range"},
		{"https://api.example.com:http/x", "not a number"},
		{"https://api.example.com:/x", "empty port"},
		{"ftp://api.example.com/x", "absolute http or https"},
		{"/v1/jobs/1", "absolute http or https"},
		{"api.example.com/v1", "absolute http or https"},
		{"https://", "no host"},
		{"https://[::1/x", "unclosed"},
	}
	for _, tc := range tests {
		err := CheckOrigin(c, tc.url)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckOrigin(%q) = %v, want allowed", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, pollwarden.ErrInvalid)):
			t.Errorf("CheckOrigin(%q) = %v, want an ErrInvalid with %q", tc.url, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "pw"):
			t.Errorf("CheckOrigin echoes user info: %v", err)
		}
	}
	// A hand-built contract without allowed_hosts allows its URL's origin.
	bare := &pollwarden.ContractSpec{Status: pollwarden.StatusCall{URL: "http://127.0.0.1:8080/{job_id}"}}
	if err := CheckOrigin(bare, "http://127.0.0.1:8080/j"); err != nil {
		t.Errorf("bare contract: %v", err)
	}
	for _, u := range []string{"http://127.0.0.1:8081/j", "http://127.0.0.1/j", "https://127.0.0.1:8080/j"} {
		if err := CheckOrigin(bare, u); err == nil {
			t.Errorf("bare contract allowed %s", u)
		}
	}
}

// TestBareHostTakesStatusPort: a bare allowed_hosts entry keeps the status
// URL's scheme and port, so loopback contracts with a port keep working.
func TestBareHostTakesStatusPort(t *testing.T) {
	c := &pollwarden.ContractSpec{Status: pollwarden.StatusCall{
		URL: "http://127.0.0.1:18301/v1/{job_id}", AllowedHosts: []string{"127.0.0.1", "localhost"}}}
	got := AllowedOrigins(c)
	want := []Origin{{"http", "127.0.0.1", 18301}, {"http", "localhost", 18301}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("AllowedOrigins = %v, want %v", got, want)
	}
	if s := got[0].String(); s != "http://127.0.0.1:18301" {
		t.Errorf("String = %s", s)
	}
	if s := (Origin{"https", "::1", 443}).String(); s != "https://[::1]" {
		t.Errorf("IPv6 String = %s", s)
	}
}

func TestDowngrade(t *testing.T) {
	if !Downgrade("https://a.example/x", "http://a.example/y") {
		t.Error("https to http is a downgrade")
	}
	if Downgrade("http://a.example/x", "https://a.example/y") || Downgrade("https://a.example/x", "https://a.example:8443/y") {
		t.Error("no downgrade reported wrongly")
	}
}

// TestWildcardOrigin: a wildcard stands for exactly one leftmost label,
// under the entry's own scheme and port.
func TestWildcardOrigin(t *testing.T) {
	c := specContract()
	c.Status.URL = "https://myres.cognitiveservices.azure.com/jobs/{job_id}"
	c.Status.AllowedHosts = []string{"https://*.cognitiveservices.azure.com", "*.openai.azure.com"}
	for _, tc := range []struct{ url, want string }{
		{"https://eastus.cognitiveservices.azure.com/x", ""},
		{"https://EastUS.CognitiveServices.Azure.com./x", ""},
		{"https://eastus.openai.azure.com/x", ""},
		{"https://evil.com.cognitiveservices.azure.com.attacker.net/x", "host is not allowed"},
		{"https://a.b.cognitiveservices.azure.com/x", "host is not allowed"},
		{"https://cognitiveservices.azure.com/x", "host is not allowed"},
		{"https://xcognitiveservices.azure.com/x", "host is not allowed"},
		{"http://eastus.cognitiveservices.azure.com/x", "unencrypted"},
		{"https://eastus.cognitiveservices.azure.com:8443/x", "port or scheme"},
	} {
		err := CheckOrigin(c, tc.url)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckOrigin(%q) = %v, want allowed", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckOrigin(%q) = %v, want a refusal with %q", tc.url, err, tc.want)
		}
	}
}

func TestWildcardOriginRefused(t *testing.T) {
	for _, tc := range []struct{ entry, want string }{
		{"*://api.example.com", "never the scheme"},
		{"https://*.example.com:*", "never the port"},
		{"https://api.example.com:8*", "never the port"},
		{"https://*.com", "at least two labels"},
		{"*.com", "at least two labels"},
		{"https://a*.example.com", "whole leftmost label"},
		{"https://api.*.example.com", "whole leftmost label"},
		{"*.*.example.com", "whole leftmost label"},
		{"https://**.example.com", "whole leftmost label"},
	} {
		src := strings.Replace(base, "  url: https://api.example.com/jobs/{job_id}\n",
			"  url: https://api.example.com/jobs/{job_id}\n  allowed_hosts: [api.example.com, \""+tc.entry+"\"]\n", 1)
		_, err := Parse([]byte(src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("allowed_hosts entry %q: %v, want a problem with %q", tc.entry, err, tc.want)
		}
	}
	// The status URL itself names one host.
	src := strings.Replace(base, "https://api.example.com/jobs", "https://*.example.com/jobs", 1)
	if _, err := Parse([]byte(src)); err == nil || !strings.Contains(err.Error(), "wildcard") {
		t.Errorf("wildcard status.url: %v", err)
	}
}
