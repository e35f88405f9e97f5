package webhook

import (
	"net"
	"net/mail"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The message formats of an endpoint.
const (
	// FormatStandard is the signed JSON of every event (Standard Webhooks).
	FormatStandard = "standard-webhooks"
	// FormatSlack is a Slack-compatible incoming-webhook message (Block
	// Kit), for escalations, reminders and expiries only.
	FormatSlack = "slack"
	// FormatEmail is an e-mail over SMTP, for the same events as Slack.
	FormatEmail = "email"
)

// SMTP is the relay an e-mail endpoint sends through. STARTTLS is used
// whenever the server offers it; Password is a reference resolved at each
// attempt.
type SMTP struct {
	// Addr is host:port.
	Addr     string
	From     string
	To       []string
	Username string
	// Password is env:NAME or file:PATH; never the password itself.
	Password string
	// RequireTLS refuses to send when the server offers no STARTTLS.
	RequireTLS bool
	// CAFile, when set, is the PEM file of the CAs trusted for STARTTLS
	// (default: the system's).
	CAFile string
}

// formatClasses are the event classes a format carries, the default
// subscription: a person is paged only for what needs them.
func formatClasses(format string) []string {
	if format == FormatStandard {
		return []string{ClassEscalated, ClassFinal, ClassReminder, ClassExpiry, ClassIncident}
	}
	return []string{ClassEscalated, ClassReminder, ClassExpiry, ClassIncident}
}

func (p *parser) format(v *yaml.Node, path string) string {
	switch v.Value {
	case FormatStandard, FormatSlack, FormatEmail:
		if v.Kind == yaml.ScalarNode {
			return v.Value
		}
	}
	p.add(v, path, "want %s, %s or %s", FormatStandard, FormatSlack, FormatEmail)
	return FormatStandard
}

// target reads where an endpoint's messages go: a URL and a signing secret
// for signed JSON, a URL reference for Slack (its URL carries its token),
// a relay for e-mail.
func (p *parser) target(n *yaml.Node, f map[string]*yaml.Node, path string, scalar func(string) (string, *yaml.Node), e *Endpoint) {
	unused := func(keys ...string) {
		for _, k := range keys {
			if v := f[k]; v != nil {
				p.add(v, join(path, k), "not used by format %s", e.Format)
			}
		}
	}
	switch e.Format {
	case FormatStandard:
		unused("smtp")
		if raw, v := scalar("url"); v != nil {
			if err := checkURL(raw); err != nil {
				p.add(v, join(path, "url"), "%v", err)
			}
			e.URL = raw
		}
		if ref, v := scalar("secret"); v != nil {
			if err := checkRef(ref); err != nil {
				p.add(v, join(path, "secret"), "%v", err)
			}
			e.Secret = ref
		}
	case FormatSlack:
		unused("smtp", "secret")
		if ref, v := scalar("url"); v != nil {
			if checkRef(ref) != nil {
				p.add(v, join(path, "url"), "a Slack incoming-webhook URL carries its token: give it as env:NAME or file:PATH (the value is not shown)")
			}
			e.URL = ref
		}
	case FormatEmail:
		unused("url", "secret")
		v := f["smtp"]
		if v == nil {
			p.add(n, join(path, "smtp"), "missing: an e-mail endpoint needs its relay (addr, from, to)")
			return
		}
		e.SMTP = p.smtp(v, join(path, "smtp"))
	}
}

func (p *parser) smtp(n *yaml.Node, path string) *SMTP {
	s := &SMTP{}
	f := p.fields(n, path, "addr", "from", "to", "username", "password", "require_tls", "ca_file")
	if f == nil {
		return s
	}
	str := func(key string, required bool) (string, *yaml.Node) {
		v := f[key]
		switch {
		case v == nil && required:
			p.add(n, join(path, key), "missing")
		case v == nil:
		case v.Kind != yaml.ScalarNode:
			p.add(v, join(path, key), "must be a string")
		default:
			return v.Value, v
		}
		return "", nil
	}
	if a, v := str("addr", true); v != nil {
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
			p.add(v, join(path, "addr"), "%q: want host:port, such as smtp.example.com:587", a)
		}
		s.Addr = a
	}
	if a, v := str("from", true); v != nil {
		if _, err := mail.ParseAddress(a); err != nil || strings.ContainsAny(a, "\r\n") {
			p.add(v, join(path, "from"), "%q is not an e-mail address", a)
		}
		s.From = a
	}
	switch v := f["to"]; {
	case v == nil:
		p.add(n, join(path, "to"), "missing: list at least one recipient")
	case v.Kind != yaml.SequenceNode || len(v.Content) == 0:
		p.add(v, join(path, "to"), "must be a non-empty list of e-mail addresses")
	default:
		for _, c := range v.Content {
			if _, err := mail.ParseAddress(c.Value); c.Kind != yaml.ScalarNode || err != nil || strings.ContainsAny(c.Value, "\r\n") {
				p.add(c, join(path, "to"), "%q is not an e-mail address", c.Value)
				continue
			}
			s.To = append(s.To, c.Value)
		}
	}
	s.Username, _ = str("username", false)
	if ref, v := str("password", false); v != nil {
		if err := checkRef(ref); err != nil {
			p.add(v, join(path, "password"), "%v", err)
		}
		s.Password = ref
	}
	if (s.Username == "") != (s.Password == "") {
		p.add(n, path, "username and password go together")
	}
	if v := f["require_tls"]; v != nil {
		if v.Kind != yaml.ScalarNode || (v.Value != "true" && v.Value != "false") {
			p.add(v, join(path, "require_tls"), "must be true or false")
		}
		s.RequireTLS = v.Value == "true"
	}
	s.CAFile, _ = str("ca_file", false)
	return s
}

// consoleURL checks the console's base URL: absolute http(s), no
// credentials, no query; links are made by appending /ui/operations/{id}.
func (p *parser) consoleURL(v *yaml.Node) string {
	if v.Kind != yaml.ScalarNode {
		p.add(v, "console_url", "must be a string")
		return ""
	}
	if err := checkURL(v.Value); err != nil {
		p.add(v, "console_url", "%v", err)
		return ""
	}
	if u, _ := url.Parse(v.Value); u.RawQuery != "" || u.Fragment != "" {
		p.add(v, "console_url", "must not carry a query or fragment: links are made by appending /ui/operations/{id}")
		return ""
	}
	return strings.TrimSuffix(v.Value, "/")
}
