package cli

import (
	"fmt"
	"net/url"
	"strings"
)

// parsePublicURL checks serve --public-url: the absolute http(s) address
// people reach the daemon at. Links are made by appending a path
// (/ui/operations/{id}), so a query, a fragment or a user name would be
// misplaced or leaked in every message; they are refused. The result has
// no trailing slash.
func parsePublicURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", fmt.Errorf("--public-url %q: not a URL", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("--public-url %q: must be an absolute http:// or https:// URL (the address people open the console at)", raw)
	case u.Host == "" || u.Opaque != "":
		return "", fmt.Errorf("--public-url %q: has no host", raw)
	case u.User != nil:
		return "", fmt.Errorf("--public-url: must not carry a user or password")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		return "", fmt.Errorf("--public-url %q: must not carry a query or fragment: links are made by appending /ui/operations/{id}", raw)
	}
	return strings.TrimSuffix(raw, "/"), nil
}
