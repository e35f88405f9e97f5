package contract

import (
	"maps"
	"slices"
	"strings"

	"github.com/pollwarden/pollwarden"
)

// headerTemplates reports a status header whose value names an unknown
// variable. A value may hold {job_id} and the declared variables (the
// MCP extension's Mcp-Name: {job_id}); the credential's header is never
// among them, as headers refuses that name.
func (d *decoder) headerTemplates(o *object, h map[string]string) {
	for name, v := range h {
		for _, m := range bodyVar.FindAllStringSubmatch(v, -1) {
			if !slices.Contains(d.known, m[1]) {
				d.addf(o.lineOf(name), o.child(name), "unknown variable {%s}: a header may use {job_id} and the names under vars", m[1])
				break
			}
		}
	}
}

// RequestHeaders returns the status headers as one operation's requests
// send them (status, cancel, result fetch): each {name} filled with the
// job id or the variable's value. A value that would hold a line break or
// NUL once filled is refused, so a job id from a provider cannot add a
// header; nothing is sent then.
func RequestHeaders(c *pollwarden.ContractSpec, jobID string, vars map[string]string) (map[string]string, error) {
	if c == nil {
		return nil, nil
	}
	if !templated(c.Status.Headers) {
		return c.Status.Headers, nil
	}
	all := withJob(jobID, vars)
	out := maps.Clone(c.Status.Headers)
	for name, v := range out {
		var missing string
		filled := bodyVar.ReplaceAllStringFunc(v, func(m string) string {
			val, ok := all[m[1:len(m)-1]]
			if !ok && missing == "" {
				missing = m[1 : len(m)-1]
			}
			return val
		})
		switch {
		case missing != "":
			return nil, refusef("header %s needs {%s} and none is given; nothing sent", name, missing)
		case strings.ContainsAny(filled, "\r\n\x00"):
			return nil, refusef("header %s would hold a line break or NUL once filled in; nothing sent", name)
		}
		out[name] = filled
	}
	return out, nil
}

// FixedHeaders returns the status headers that hold no template: those a
// session handshake, shared by every job, sends.
func FixedHeaders(c *pollwarden.ContractSpec) map[string]string {
	if !templated(c.Status.Headers) {
		return c.Status.Headers
	}
	out := map[string]string{}
	for k, v := range c.Status.Headers {
		if !bodyVar.MatchString(v) {
			out[k] = v
		}
	}
	return out
}

func templated(h map[string]string) bool {
	for _, v := range h {
		if bodyVar.MatchString(v) {
			return true
		}
	}
	return false
}
