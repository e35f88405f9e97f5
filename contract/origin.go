package contract

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/pollwarden/pollwarden"
)

// Origin is the scheme, host and port a request goes to: the unit the
// status credential is bound to. Two URLs with the same host but another
// port or scheme are different servers, and may be run by someone else.
type Origin struct {
	Scheme string // "http" or "https"
	Host   string // lower-case, without IPv6 brackets or a trailing dot
	Port   int    // always set: the scheme's default when the URL has none
}

// String writes the origin as a URL prefix, omitting a default port.
func (o Origin) String() string {
	h := o.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if o.Port == defaultPort(o.Scheme) {
		return o.Scheme + "://" + h
	}
	return o.Scheme + "://" + h + ":" + strconv.Itoa(o.Port)
}

func defaultPort(scheme string) int {
	if scheme == "https" {
		return 443
	}
	return 80
}

// ParseOrigin reads the origin of an absolute http(s) URL. It refuses user
// information and a port that is empty, not a number, 0 or above 65535,
// each with a message naming the problem; the message never repeats the
// URL, which may carry a secret.
func ParseOrigin(rawURL string) (Origin, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	scheme = strings.ToLower(scheme)
	if !ok || (scheme != "http" && scheme != "https") {
		return Origin{}, refusef("not an absolute http or https URL")
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if strings.ContainsRune(authority, '@') {
		return Origin{}, refusef("URL carries user credentials")
	}
	host, port, err := splitHostPort(authority)
	if err != nil {
		return Origin{}, err
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err
		}
		return Origin{}, refusef("not a valid URL: %v", err)
	}
	if u.User != nil {
		return Origin{}, refusef("URL carries user credentials")
	}
	if strings.Contains(host, "*") {
		return Origin{}, refusef("a URL names one host; a wildcard belongs only in allowed_hosts")
	}
	if normHost(u.Hostname()) != host {
		return Origin{}, refusef("the URL's host cannot be read unambiguously")
	}
	if port == 0 {
		port = defaultPort(scheme)
	}
	return Origin{Scheme: scheme, Host: host, Port: port}, nil
}

// splitHostPort splits an authority and checks its port (0 means none).
func splitHostPort(authority string) (string, int, error) {
	host, portStr := authority, ""
	hasPort := false
	if strings.HasPrefix(authority, "[") {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return "", 0, refusef("unclosed '[' in the URL's host")
		}
		host = authority[1:end]
		if tail := authority[end+1:]; tail != "" {
			if tail[0] != ':' {
				return "", 0, refusef("unexpected text after the URL's IPv6 host")
			}
			portStr, hasPort = tail[1:], true
		}
		if net.ParseIP(host) == nil {
			return "", 0, refusef("the URL's host is not an IPv6 address")
		}
	} else if i := strings.LastIndexByte(authority, ':'); i >= 0 {
		host, portStr, hasPort = authority[:i], authority[i+1:], true
	}
	host = normHost(host)
	if host == "" {
		return "", 0, refusef("URL names no host")
	}
	if !hasPort {
		return host, 0, nil
	}
	p, err := checkPort(portStr)
	return host, p, err
}

// checkPort accepts a decimal port from 1 to 65535.
func checkPort(s string) (int, error) {
	if s == "" {
		return 0, refusef("empty port after ':' (write the port, or drop the ':')")
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, refusef("port %s is not a number", clip(s))
		}
	}
	p, err := strconv.Atoi(s)
	switch {
	case err != nil || p > 65535:
		if len(s) > 12 {
			s = s[:12] + "…"
		}
		return 0, refusef("port %s is out of range (1 to 65535)", s)
	case p == 0:
		return 0, refusef("port 0 is not a port a request can go to (1 to 65535)")
	}
	return p, nil
}

// AllowedOrigins lists where the contract's credential may go: the origin
// of base_url when there is one, that of status.url, then each
// allowed_hosts entry. A bare host entry takes
// status.url's scheme and port; a full entry ("https://host:port") is
// itself. Without a readable status.url, bare entries allow nothing.
func AllowedOrigins(c *pollwarden.ContractSpec) []Origin {
	base, haveBase := templateOrigin(c.Status.URL)
	var out []Origin
	add := func(o Origin) {
		for _, have := range out {
			if have == o {
				return
			}
		}
		out = append(out, o)
	}
	if c.BaseURL != "" {
		if o, err := ParseOrigin(c.BaseURL); err == nil {
			add(o)
		}
	}
	if haveBase {
		add(base)
	}
	for _, entry := range c.Status.AllowedHosts {
		if o, err := entryOrigin(entry, base, haveBase); err == nil {
			add(o)
		}
	}
	return out
}

// Matches reports whether got is o, or, when o's host is a wildcard
// ("*.cognitiveservices.azure.com"), whether got has o's scheme and port
// and a host exactly one label under the wildcard's suffix: never the
// suffix itself, a deeper name, or an IP address.
func (o Origin) Matches(got Origin) bool {
	suffix, wild := strings.CutPrefix(o.Host, "*")
	if !wild {
		return o == got
	}
	if o.Scheme != got.Scheme || o.Port != got.Port || net.ParseIP(got.Host) != nil {
		return false
	}
	label, ok := strings.CutSuffix(got.Host, suffix)
	return ok && label != "" && !strings.ContainsAny(label, ".*")
}

// allowedBy reports whether got matches one of the origins.
func allowedBy(allowed []Origin, got Origin) bool {
	for _, o := range allowed {
		if o.Matches(got) {
			return true
		}
	}
	return false
}

// checkWildcard accepts a host with a wildcard only as its whole leftmost
// label over at least two more labels: "*.cognitiveservices.azure.com",
// not "*.com", "a*.example.com" or "api.*.example.com".
func checkWildcard(h string) error {
	if !strings.Contains(h, "*") {
		return nil
	}
	rest, ok := strings.CutPrefix(h, "*.")
	switch {
	case !ok || strings.Contains(rest, "*"):
		return refusef("a wildcard is the whole leftmost label of a host, as in *.example.com, got %s", clip(h))
	case strings.Count(rest, ".") < 1 || strings.HasPrefix(rest, ".") || strings.HasSuffix(rest, "."):
		return refusef("a wildcard needs at least two labels after it (*.example.com, not *.com), got %s", clip(h))
	}
	return nil
}

// entryOrigin reads one allowed_hosts entry.
func entryOrigin(entry string, base Origin, haveBase bool) (Origin, error) {
	if strings.Contains(entry, "://") {
		scheme, rest, _ := strings.Cut(entry, "://")
		if strings.Contains(scheme, "*") {
			return Origin{}, refusef("a wildcard may stand for one host label, never the scheme")
		}
		authority := strings.TrimSuffix(rest, "/")
		if i := strings.LastIndexByte(authority, ':'); i >= 0 && strings.Contains(authority[i:], "*") {
			return Origin{}, refusef("a wildcard may stand for one host label, never the port")
		}
		parse := entry
		wild := strings.HasPrefix(rest, "*")
		if strings.Contains(authority, "*") {
			host := authority
			if i := strings.LastIndexByte(host, ':'); i >= 0 {
				host = host[:i]
			}
			if err := checkWildcard(normHost(host)); err != nil {
				return Origin{}, err
			}
			// Parse with a plain label in the wildcard's place.
			parse = scheme + "://w" + rest[1:]
		}
		o, err := ParseOrigin(parse)
		if err != nil {
			return Origin{}, err
		}
		if wild {
			o.Host = "*" + o.Host[1:]
		}
		if _, rest, _ := strings.Cut(entry, "://"); strings.ContainsAny(strings.TrimSuffix(rest, "/"), "/?#") {
			return Origin{}, refusef("an origin is scheme://host[:port] with no path, query or fragment")
		}
		return o, nil
	}
	if !haveBase {
		return Origin{}, refusef("a bare host needs a readable status.url for its scheme and port")
	}
	h := normHost(entry)
	if h == "" || strings.ContainsAny(h, "/@?#% \t") || (strings.Contains(h, ":") && net.ParseIP(h) == nil) {
		return Origin{}, refusef("must be a bare host name or an origin such as https://host:8443 (no path), got %s", clip(entry))
	}
	if err := checkWildcard(h); err != nil {
		return Origin{}, err
	}
	return Origin{Scheme: base.Scheme, Host: h, Port: base.Port}, nil
}

// CheckOrigin refuses rawURL unless its scheme, host and port all match one
// of the contract's allowed origins. It is the one check for every URL that
// carries the credential: status_url and --status-url, each redirect hop,
// a 202's Location, cancel (and later submit and result) URLs.
func CheckOrigin(c *pollwarden.ContractSpec, rawURL string) error {
	if c == nil {
		return refusef("no contract to check the URL against")
	}
	got, err := ParseOrigin(rawURL)
	if err != nil {
		return err
	}
	allowed := AllowedOrigins(c)
	if allowedBy(allowed, got) {
		return nil
	}
	names := make([]string, len(allowed))
	for i, o := range allowed {
		names[i] = o.String()
	}
	why := "its host is not allowed"
	for _, o := range allowed {
		if o.Host != got.Host && !(Origin{Scheme: o.Scheme, Host: o.Host, Port: got.Port}).Matches(Origin{Scheme: o.Scheme, Host: got.Host, Port: got.Port}) {
			continue
		}
		if got.Scheme == "http" && o.Scheme == "https" {
			why = "plain http where the contract uses https would send the credential unencrypted"
			break
		}
		why = "its port or scheme is not allowed"
	}
	return refusef("%s is not an allowed origin of contract %s (%s; allowed: %s)",
		got, c.Name, why, strings.Join(names, ", "))
}

// Downgrade reports whether following a redirect from one URL to another
// would move from https to plain http; that is refused even between two
// allowed origins.
func Downgrade(from, to string) bool {
	f, err1 := ParseOrigin(from)
	t, err2 := ParseOrigin(to)
	return err1 == nil && err2 == nil && f.Scheme == "https" && t.Scheme == "http"
}
