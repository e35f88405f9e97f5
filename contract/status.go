package contract

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/pollwarden/pollwarden"
)

func (d *decoder) status(o *object) pollwarden.StatusCall {
	s := pollwarden.StatusCall{Method: "GET"}
	var base Origin
	raw, urlLine, urlOK := o.str("url", true)
	if urlOK {
		var msg string
		raw, msg = d.resolve(raw)
		s.URL = raw
		if msg == "" {
			base, msg = checkTemplate(raw, d.known...)
		}
		if msg != "" {
			if !d.baseBad {
				d.addf(urlLine, o.child("url"), "%s", msg)
			}
			urlOK = false
		}
	}
	methodLine := o.lineOf("method")
	if m, line, ok := o.str("method", false); ok {
		s.Method, methodLine = d.method(line, o.child("method"), m), line
	}
	unsafe := o.boolean("unsafe_method")
	declared := o.boolean("safe")
	safe := s.Method == "GET" || s.Method == "HEAD"
	switch {
	case declared && unsafe:
		d.addf(o.lineOf("safe"), o.child("safe"), "safe and unsafe_method contradict each other; keep one")
	case declared && safe:
		d.addf(o.lineOf("safe"), o.child("safe"), "method %s is safe already; remove safe", s.Method)
	case !safe && !unsafe && !declared:
		d.addf(methodLine, o.child("method"), "%s is not a safe method: a status call must only observe; "+
			"add safe: true if the provider documents this call as a read, or unsafe_method: true to accept that every call then needs approval", s.Method)
	case safe && unsafe:
		d.addf(o.lineOf("unsafe_method"), o.child("unsafe_method"), "method %s is safe; remove unsafe_method", s.Method)
	}
	s.UnsafeMethod = unsafe && !safe && !declared
	s.Safe = declared && !safe && !unsafe
	if v, ok := o.get("body", false); ok {
		if safe {
			d.addf(o.lineOf("body"), o.child("body"), "a %s status call sends no body; use another method or remove body", s.Method)
		} else {
			s.Body = d.body(o.child("body"), v)
		}
	}
	s.Credential = d.credential(o.obj("credential", false, credentialKeys...), base, urlOK)
	s.CAFile = d.caFile(o)
	s.Headers = d.headers(o.obj("headers", false), s.Credential)
	s.Timeout, _ = o.duration("timeout", defaultTimeout, false)
	s.MaxBodyBytes = int64(o.integer("max_body_bytes", defaultMaxBodyBytes, 1))
	if h, line, ok := o.str("request_id_header", false); ok {
		if !isToken(h) {
			d.addf(line, o.child("request_id_header"), "must be a header name, got %s", clip(h))
		}
		s.RequestIDHeader = h
	}
	s.PropagateTrace = o.boolean("propagate_trace")
	if v, line, ok := o.str("conditional", false); ok {
		if v != "etag" {
			d.addf(line, o.child("conditional"), "must be etag (If-None-Match with the last ETag), got %s", clip(v))
		}
		s.Conditional = v
	}
	s.AllowedHosts = d.allowedHosts(o, base, urlOK)
	switch {
	case s.AllowedHosts == nil && urlOK:
		s.AllowedHosts = []string{base.Host}
	case urlOK && !originListed(s, base) && !(d.base != "" && base == d.baseOrigin):
		d.addf(urlLine, o.child("url"), "origin %s is not in status.allowed_hosts", base)
	}
	return s
}

// originListed reports whether o is among the entries of allowed_hosts.
func originListed(s pollwarden.StatusCall, o Origin) bool {
	for _, entry := range s.AllowedHosts {
		if eo, err := entryOrigin(entry, o, true); err == nil && eo == o {
			return true
		}
	}
	return false
}

// method checks and upper-cases an HTTP method.
func (d *decoder) method(line int, path, m string) string {
	m = strings.ToUpper(m)
	if !isToken(m) {
		d.addf(line, path, "must be an HTTP method such as GET, got %s", clip(m))
	}
	return m
}

// checkRef accepts env:NAME and file:PATH and nothing else.
func checkRef(ref string) string {
	if name, ok := strings.CutPrefix(ref, "env:"); ok {
		for i, r := range name {
			if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
				return "env: must name an environment variable ([A-Za-z_][A-Za-z0-9_]*)"
			}
		}
		if name == "" {
			return "env: must name an environment variable"
		}
		return ""
	}
	if p, ok := strings.CutPrefix(ref, "file:"); ok {
		if p == "" || strings.ContainsAny(p, "\x00\n\r") {
			return "file: must name a file path"
		}
		return ""
	}
	return "must be env:NAME or file:PATH: a contract names where the secret lives and never holds it"
}

// headers decodes extra request headers. Headers that carry credentials
// are refused: they would put a literal secret in the contract.
func (d *decoder) headers(o *object, cred *pollwarden.Credential) map[string]string {
	if !o.present {
		return nil
	}
	out := make(map[string]string, len(o.keys))
	for _, name := range o.keys {
		v, line, ok := o.str(name, false)
		if !ok {
			continue
		}
		p := o.child(name)
		switch canon := strings.ToLower(name); {
		case !isToken(name):
			d.addf(o.lineOf(name), p, "not a valid header name")
		case canon == "authorization" || canon == "proxy-authorization" || canon == "cookie":
			d.addf(o.lineOf(name), p, "would hold a secret in the contract; use status.credential (value not shown)")
		case canon == "host":
			d.addf(o.lineOf(name), p, "may not be set; the host comes from status.url")
		case cred != nil && strings.EqualFold(name, cred.Header):
			d.addf(o.lineOf(name), p, "conflicts with status.credential.header")
		case strings.ContainsAny(v, "\r\n\x00"):
			d.addf(line, p, "value may not contain line breaks or NUL")
		default:
			out[name] = v
		}
	}
	return out
}

// allowedHosts returns the normalized list, or nil when the key is absent.
// An entry is a bare host (status.url's scheme and port) or an origin
// scheme://host[:port]; an https contract may list only https origins, so
// no entry ever lets the credential travel unencrypted.
func (d *decoder) allowedHosts(o *object, base Origin, haveBase bool) []string {
	v, ok := o.get("allowed_hosts", false)
	if !ok {
		return nil
	}
	items := o.list("allowed_hosts")
	if v.Kind == yaml.SequenceNode && len(items) == 0 {
		d.addf(v.Line, o.child("allowed_hosts"), "must list at least one host")
	}
	out := []string{}
	for _, it := range items {
		if it.node == nil || it.node.Kind != yaml.ScalarNode || isNull(it.node) {
			d.addf(it.line, it.path, "must be a string, got %s", kindName(it.node))
			continue
		}
		entry := strings.TrimSpace(it.node.Value)
		if !strings.Contains(entry, "://") {
			entry = normHost(entry)
		}
		eo, err := entryOrigin(entry, base, true)
		switch {
		case err != nil:
			d.addf(it.line, it.path, "%v", err)
			continue
		case haveBase && base.Scheme == "https" && eo.Scheme == "http":
			d.addf(it.line, it.path, "%s is plain http and status.url is https: the credential would travel unencrypted", eo)
			continue
		}
		if strings.Contains(entry, "://") {
			entry = eo.String()
		}
		out = append(out, entry)
	}
	return out
}

// normHost lower-cases a host name and drops IPv6 brackets and a trailing
// root dot, so equal hosts compare equal.
func normHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(h, ".")
}

// isToken reports whether s is an RFC 9110 token (header names, methods,
// auth schemes).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("!#$%&'*+-.^_`|~", r) {
			continue
		}
		return false
	}
	return true
}
