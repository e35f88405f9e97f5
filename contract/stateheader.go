package contract

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pollwarden/pollwarden"
)

// maxHeaderName bounds a header name a contract reads from answers; real
// names are short, and the name is echoed in problems and summaries.
const maxHeaderName = 128

// stateHeader decodes state.header, given instead of state.path: the
// state is that response header's value.
func (d *decoder) stateHeader(o *object) string {
	if o.has("path") {
		d.addf(o.lineOf("header"), o.child("header"), "give path or header, not both: the state is read from one place")
	}
	return d.headerName(o, "header")
}

// fieldHeader decodes a result.require entry's header, given instead of
// its path.
func (d *decoder) fieldHeader(o *object) string {
	if o.has("path") {
		d.addf(o.lineOf("header"), o.child("header"), "give path or header, not both: a field is read from one place")
	}
	return d.headerName(o, "header")
}

// headerName checks a response header name: an RFC 9110 token, bounded.
func (d *decoder) headerName(o *object, key string) string {
	h, line, ok := o.str(key, true)
	switch {
	case !ok:
		return ""
	case len(h) > maxHeaderName:
		d.addf(line, o.child(key), "must be a header name of at most %d characters, got %d", maxHeaderName, len(h))
	case !isToken(h):
		d.addf(line, o.child(key), "must be a header name (an RFC 9110 token such as x-ms-copy-status), got %s", clip(h))
	default:
		return h
	}
	return ""
}

// uniqueFields refuses a header field whose key another required field
// already has: both would land under one name in the result.
func (d *decoder) uniqueFields(items []item, req []pollwarden.Field) {
	seen, header := map[string]bool{}, map[string]bool{}
	for i, f := range req {
		k := f.Key()
		if k == "" {
			continue
		}
		if seen[k] && (f.Header != "" || header[k]) {
			d.addf(items[i].line, items[i].path, "%s is required twice; a header field is kept under its lower-case name", clip(k))
		}
		seen[k], header[k] = true, header[k] || f.Header != ""
	}
}

// headAnswersNoBody refuses a body path on a HEAD status call: a HEAD
// answer has no body, so the path could never be read and every poll
// would stop on a missing state or field.
func (d *decoder) headAnswersNoBody(state, result *object, c *pollwarden.ContractSpec) {
	if c.Status.Method != "HEAD" {
		return
	}
	const why = "method HEAD answers no body, so %s cannot be read; %s"
	if c.State.Path != "" {
		d.addf(state.lineOf("path"), state.child("path"), why, "state.path", "use state.header")
	}
	if c.State.RawPath != "" {
		d.addf(state.lineOf("raw"), state.child("raw"), why, "state.raw", "remove it")
	}
	for i, f := range c.Result.Require {
		if f.Path != "" {
			p := fmt.Sprintf("%s[%d]", result.child("require"), i)
			d.addf(result.lineOf("require"), p, why, p+".path", "use header: NAME")
		}
	}
	if c.Result.ErrorPath != "" {
		d.addf(result.lineOf("error_path"), result.child("error_path"), why, "result.error_path", "remove it")
	}
}

// headerState reads the state from the contract's state header. The value
// is matched exactly like a body's state string (or case-insensitively
// under case_insensitive); an absent or empty header is a problem, never
// a state.
func (x *Loaded) headerState(f *pollwarden.BodyFacts, headers map[string]string) {
	name := x.c.State.Header
	s, ok := headers[strings.ToLower(name)]
	if !ok || s == "" {
		f.Problem = fmt.Sprintf("state header %s is absent from the answer", name)
		return
	}
	f.State, f.HasState = x.canonical(s), true
	if s != f.State {
		f.ProviderState = s
	}
}

// ResponseHeaders names, in lower case, the response headers the contract
// reads: its state header, its header fields and its rate-limit headers.
// The prober keeps these and no others.
func ResponseHeaders(c *pollwarden.ContractSpec) []string {
	var out []string
	add := func(h string) {
		if h == "" {
			return
		}
		h = strings.ToLower(h)
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	add(c.State.Header)
	for _, f := range c.Result.Require {
		add(f.Header)
	}
	if q := c.Quota; q != nil {
		add(q.RemainingHeader)
	}
	if rl := c.RateLimit; rl != nil {
		add(rl.ResetHeader)
		for _, s := range rl.When {
			add(s.Header)
		}
	}
	return out
}
