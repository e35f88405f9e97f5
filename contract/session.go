package contract

import (
	"strings"

	"github.com/pollwarden/pollwarden"
)

// session decodes status.session, the handshake a provider needs before
// it answers (MCP's initialize over streamable HTTP). It carries the
// status credential, so its origin must be one of the status call's;
// one session serves every operation of the contract, so its body holds
// no job id or variable.
func (d *decoder) session(o *object, c *pollwarden.ContractSpec) *pollwarden.SessionSpec {
	if !o.present {
		return nil
	}
	s := &pollwarden.SessionSpec{Method: "POST", URL: c.Status.URL}
	if u, line, ok := o.str("url", false); ok {
		s.URL = d.originURL(o, line, u, c, " (a session is shared by every job, so it takes no variable)")
	} else if strings.Contains(s.URL, "{") {
		d.addf(o.line, o.child("url"), "status.url has variables, and a session is shared by every job: give session.url")
	}
	if m, line, ok := o.str("method", false); ok {
		s.Method = d.method(line, o.child("method"), m)
	}
	d.known, s.Body = nil, ""
	if v, ok := o.get("body", false); ok {
		s.Body = d.body(o.child("body"), v)
	}
	if v, ok := o.get("notify", false); ok {
		s.Notify = d.body(o.child("notify"), v)
	}
	d.known = templateVars(c.Vars)
	if h, line, ok := o.str("header", true); ok {
		if !isToken(h) {
			d.addf(line, o.child("header"), "must be a header name such as Mcp-Session-Id, got %s", clip(h))
		}
		s.Header = h
	}
	return s
}
