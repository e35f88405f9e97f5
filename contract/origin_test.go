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
	bare := &pollwarden.Contract{Status: pollwarden.StatusCall{URL: "http://127.0.0.1:8080/{job_id}"}}
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
	c := &pollwarden.Contract{Status: pollwarden.StatusCall{
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
