package prober

import (
	"net"
	"net/url"
	"strings"

	"github.com/pollwarden/pollwarden"
)

// HostAllowed reports whether host (optionally with a port, as in URL.Host
// or a bare allowed_hosts entry) is in allowed. Hostnames compare
// case-insensitively, ports and a trailing dot are ignored. Exported so
// doors can check a 202's Location against the same rule (R15).
func HostAllowed(allowed []string, host string) bool {
	h := hostname(host)
	if h == "" {
		return false
	}
	for _, a := range allowed {
		if hostname(a) == h {
			return true
		}
	}
	return false
}

// hostname strips port, IPv6 brackets and a trailing dot, and lower-cases.
func hostname(hostport string) string {
	h := hostport
	if sh, _, err := net.SplitHostPort(hostport); err == nil {
		h = sh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// allowedHosts is the contract's list, or — when empty, as with a contract
// built by hand — the host of the contract's own status URL, the same
// default the contract file documents. No list and no URL allows nothing.
func allowedHosts(c *pollwarden.Contract) []string {
	if len(c.Status.AllowedHosts) > 0 {
		return c.Status.AllowedHosts
	}
	if u, err := url.Parse(c.Status.URL); err == nil && u.Host != "" {
		return []string{u.Host}
	}
	return nil
}
