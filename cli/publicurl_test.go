package cli

import (
	"strings"
	"testing"
)

// TestParsePublicURL: an absolute http(s) address without user, query or
// fragment is taken (trailing slash dropped); anything else is refused
// naming the flag and why.
func TestParsePublicURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://pw.example.com/":        "https://pw.example.com",
		"http://127.0.0.1:8470":          "http://127.0.0.1:8470",
		"https://example.com/pollwarden": "https://example.com/pollwarden",
	} {
		if got, err := parsePublicURL(in); err != nil || got != want {
			t.Errorf("parsePublicURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"ftp://pw.example.com":           "absolute http",
		"pw.example.com/ui":              "absolute http",
		"https://":                       "no host",
		"https:pw.example.com":           "no host",
		"https://a:b@pw.example.com":     "user or password",
		"https://pw.example.com/?next=x": "query or fragment",
		"https://pw.example.com/?":       "query or fragment",
		"https://pw.example.com/#top":    "query or fragment",
		"https://pw.example.com/#":       "query or fragment",
		"https://pw.example.com/%zz":     "not a URL",
	} {
		_, err := parsePublicURL(in)
		if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "--public-url") {
			t.Errorf("parsePublicURL(%q) = %v; want a refusal for %s", in, err, why)
		}
		if err != nil && strings.Contains(err.Error(), ":b@") {
			t.Errorf("the refusal echoes the password: %v", err)
		}
	}
}
