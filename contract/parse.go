package contract

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pollwarden/pollwarden"
)

// Defaults for keys a contract may omit (SPEC, "Contract files").
const (
	defaultTimeout         = 10 * time.Second
	defaultMaxBodyBytes    = 1 << 20
	defaultBackoffBase     = 5 * time.Second
	defaultBackoffMax      = 120 * time.Second
	defaultDeadline        = 40 * time.Minute
	defaultMaxRequests     = 12
	defaultMaxTransport    = 3
	defaultMaxRateLimited  = 3
	defaultExtensionTime   = 15 * time.Minute
	defaultExtensionChecks = 4
)

// Load reads and parses the contract file at path. A *Problems error
// names the file on every line. Its `extends:` may name another contract
// of the same directory (NAME.yaml) or a built-in, in that order.
func Load(path string) (*pollwarden.ContractSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read contract: %w", err)
	}
	path = filepath.Clean(path)
	c, err := ParseFrom(data, path, siblings(filepath.Dir(path)).Then(Builtins))
	if ps, ok := errors.AsType[*Problems](err); ok {
		ps.File = path
	}
	return c, err
}

// Parse reads a contract from YAML (or JSON, which is YAML) and checks it.
// On failure the error is a *Problems listing every problem with its line.
// An `extends:` may name a built-in.
func Parse(data []byte) (*pollwarden.ContractSpec, error) {
	return ParseFrom(data, "", Builtins)
}

// ParseFrom is Parse with the place the text came from (a file path or
// "builtin:NAME", "" when none) and where its `extends:` bases are found.
// The merged contract is checked as a whole.
func ParseFrom(data []byte, source string, lookup BaseLookup) (*pollwarden.ContractSpec, error) {
	root, probs := document(data)
	if len(probs) > 0 {
		return nil, problemsOf(probs)
	}
	d := &decoder{}
	var chain []string
	if source != "" {
		chain = []string{source}
	}
	root = d.extend(root, lookup, chain, []string{topName(root)})
	if len(d.probs) > 0 {
		// Without its base the file would be judged alone, and every key
		// the base supplies reported missing ahead of the real cause.
		return nil, problemsOf(d.probs)
	}
	c := d.contract(root)
	if err := problemsOf(d.probs); err != nil {
		return nil, err
	}
	return c, nil
}

// document returns the single document's root node.
func document(data []byte) (*yaml.Node, []Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, []Problem{plainYAML(yamlProblem(err), data)}
	}
	if err != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || isNull(resolve(doc.Content[0])) {
		return nil, []Problem{{Line: 1, Msg: "empty file: expected a contract (a mapping with version, name, status, state, …)"}}
	}
	if a := aliasBomb(&doc); a != nil {
		return nil, []Problem{{Line: a.Line, Msg: fmt.Sprintf("YAML alias *%s: the file's aliases stand for more than %d values (an alias bomb); write the values out", anchorName(a.Value), maxExpanded)}}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, []Problem{yamlProblem(err)}
	default:
		return nil, []Problem{{Line: extra.Line, Msg: "more than one YAML document; a contract file holds one"}}
	}
	return doc.Content[0], nil
}

// contract decodes every section, then checks what spans sections.
func (d *decoder) contract(root *yaml.Node) *pollwarden.ContractSpec {
	top := d.object("", root.Line, root, []string{
		"version", "name", "status", "state", "result", "hints",
		"not_found", "backoff", "limits", "escalation", "cancel", "vars", "base_url", "rate_limit", "callback", "submit",
		"quota",
	})
	if top.bad {
		return nil
	}
	vars := d.vars(top.obj("vars", false))
	d.known = templateVars(vars)
	baseBad := false
	if b, o, ok := d.baseURL(top); ok {
		d.base, d.baseOrigin = b, o
	} else if _, given := top.get("base_url", false); given {
		baseBad = true
	}
	d.baseBad = baseBad
	status := top.obj("status", true, "url", "method", "unsafe_method", "safe", "body", "headers",
		"credential", "timeout", "max_body_bytes", "allowed_hosts", "request_id_header", "ca_file", "ca", "conditional", "propagate_trace", "session")
	state := top.obj("state", true, "path", "header", "pending", "success", "failure", "cancelled", "expired", "unlisted", "case_insensitive", "status_codes", "raw")
	result := top.obj("result", false, "require", "error_path", "fetch")
	c := &pollwarden.ContractSpec{
		Vars:    vars,
		BaseURL: d.base,
		Version: d.version(top),
		Name:    d.name(top),
		Status:  d.status(status),
		State:   d.state(state),
		Result:  d.result(result),
		Hints:   d.hints(top.obj("hints", false, "poll_after_seconds", "next_check_at", "job_expires_at")),
	}
	nf := top.obj("not_found", false, "pending_for")
	c.NotFoundPendingFor, _ = nf.duration("pending_for", 0, true)
	c.Backoff = d.backoff(top.obj("backoff", false, "base", "max"))
	c.Limits = d.limits(top.obj("limits", false, "deadline", "max_status_requests", "max_transport_failures", "max_rate_limited", "max_requests_per_second", "transport_failures"))
	esc := top.obj("escalation", false, "extension", "console_url", "remind_after", "expire_after", "on_expiry")
	c.Escalation = d.escalation(esc)
	c.Cancel = d.cancel(top.obj("cancel", false, "url", "method", "body", "idempotent"), c)
	c.Status.Session = d.session(status.obj("session", false, "url", "method", "body", "notify", "header"), c)
	c.Submit = d.submit(top.obj("submit", false, "url", "method", "headers", "job_id_path", "status_location",
		"idempotency_key_header", "max_attempts"), c)
	c.ResultFetch = d.resultFetch(result.obj("fetch", false, "url", "method", "safe", "body", "error_path", "next", "max_pages", "max_bytes", "max_fetches"), c)
	c.RateLimit = d.rateLimit(top.obj("rate_limit", false, "when", "reset", "retry_after"))
	c.Quota = d.quota(top.obj("quota", false, "requests", "per", "key", "remaining_header"))
	d.decisionTimes(esc, c)
	c.Callback = d.callback(top.obj("callback", false, "verify", "secret", "job_id_path", "event_filter"))
	d.eachCallApproved(top, result, c)
	d.headAnswersNoBody(state, result, c)
	return c
}

// eachCallApproved refuses a submission or a result fetch under a
// credential marked approve_each_call: an approval lets out one status
// call, and nothing would stand before those calls, which carry the same
// credential (a submission's body is the agent's own). A cancel is an
// approver's act already, so it needs no refusal.
func (d *decoder) eachCallApproved(top, result *object, c *pollwarden.ContractSpec) {
	if cr := c.Status.Credential; cr == nil || !cr.ApproveEachCall {
		return
	}
	const why = "the status credential is marked approve_each_call, and %s would send it with no approver's approval; remove %s, or use a contract whose credential is not marked"
	if c.Submit != nil {
		d.addf(top.lineOf("submit"), "submit", why, "a submission", "submit")
	}
	if c.ResultFetch != nil {
		d.addf(result.lineOf("fetch"), result.child("fetch"), why, "a result fetch", "result.fetch")
	}
}

func (d *decoder) version(top *object) int {
	v, ok := top.get("version", true)
	if !ok {
		return 0
	}
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Value != "1" {
		d.addf(v.Line, "version", "must be 1 (the only version this pollwarden reads)")
		return 0
	}
	return 1
}

func (d *decoder) name(top *object) string {
	s, line, ok := top.str("name", true)
	if ok && !validName(s) {
		d.addf(line, "name", "must be lowercase letters, digits and dashes ([a-z0-9-]+), got %s", clip(s))
	}
	return s
}

func (d *decoder) hints(o *object) pollwarden.HintPaths {
	var h pollwarden.HintPaths
	delays := []pollwarden.HintUnit{pollwarden.UnitSeconds, pollwarden.UnitMilliseconds, pollwarden.UnitDuration}
	times := []pollwarden.HintUnit{pollwarden.UnitRFC3339, pollwarden.UnitUnixSeconds, pollwarden.UnitUnixMilliseconds}
	h.PollAfterSeconds, h.PollAfterUnit = d.hint(o, "poll_after_seconds", delays)
	h.NextCheckAt, h.NextCheckAtUnit = d.hint(o, "next_check_at", times)
	var ho *object
	h.JobExpiresAt, h.JobExpiresAtUnit, ho = d.hintObj(o, "job_expires_at", times, "after")
	if ho != nil && ho.has("after") {
		h.JobExpiresAfter, h.JobExpiresAfterUnit = d.hint(ho, "after", delays)
	}
	return h
}

// hint decodes one hint: a JMESPath in the default unit, or {path, unit}.
func (d *decoder) hint(o *object, key string, units []pollwarden.HintUnit) (string, pollwarden.HintUnit) {
	p, u, _ := d.hintObj(o, key, units)
	return p, u
}

// hintObj is hint that also accepts the extra keys and returns the
// hint's mapping (nil when written as a bare path) for the caller to read
// them.
func (d *decoder) hintObj(o *object, key string, units []pollwarden.HintUnit, extra ...string) (string, pollwarden.HintUnit, *object) {
	v, ok := o.get(key, false)
	if !ok {
		return "", "", nil
	}
	if v.Kind != yaml.MappingNode {
		return d.optPath(o, key), "", nil
	}
	ho := o.obj(key, false, append([]string{"path", "unit"}, extra...)...)
	p := d.optPath(ho, "path")
	if p == "" {
		ho.get("path", true)
	}
	u, line, ok := ho.str("unit", false)
	if !ok {
		return p, "", ho
	}
	if !slices.Contains(units, pollwarden.HintUnit(u)) {
		names := make([]string, len(units))
		for i, x := range units {
			names[i] = string(x)
		}
		d.addf(line, ho.child("unit"), "must be one of %s, got %s", strings.Join(names, ", "), clip(u))
		return p, "", ho
	}
	if u == string(units[0]) {
		return p, "", ho
	}
	return p, pollwarden.HintUnit(u), ho
}

func (d *decoder) backoff(o *object) pollwarden.Backoff {
	base, baseOK := o.duration("base", defaultBackoffBase, false)
	maxDelay, maxOK := o.duration("max", defaultBackoffMax, false)
	if maxDelay < base && (baseOK || maxOK) {
		// Blame the value the user wrote in this file, never a default or
		// a base contract's value (those carry no line of this file).
		maxWritten := o.has("max") && o.ents["max"].line > 0
		switch {
		case maxWritten:
			d.addf(o.lineOf("max"), o.child("max"), "must be at least base (%s), got %s", base, maxDelay)
		case o.has("max"):
			d.addf(o.lineOf("base"), o.child("base"), "%s is more than backoff.max (%s, from the base contract); lower base or set max", base, maxDelay)
		default:
			d.addf(o.lineOf("base"), o.child("base"), "%s is more than backoff.max (%s, the default when max is not given); lower base or set max", base, maxDelay)
		}
	}
	return pollwarden.Backoff{Base: base, Max: maxDelay}
}

func (d *decoder) limits(o *object) pollwarden.Limits {
	return pollwarden.Limits{
		Deadline:                     o.span("deadline", defaultDeadline),
		MaxStatusRequests:            o.limit("max_status_requests", defaultMaxRequests),
		MaxTransportFailures:         o.limit("max_transport_failures", defaultMaxTransport),
		MaxRateLimited:               o.limit("max_rate_limited", defaultMaxRateLimited),
		MaxRequestsPerSecond:         o.rate("max_requests_per_second"),
		ConsecutiveTransportFailures: d.transportCount(o),
	}
}

// transportCount reads limits.transport_failures: total (the default, a
// success does not reset the count) or consecutive.
func (d *decoder) transportCount(o *object) bool {
	s, line, ok := o.str("transport_failures", false)
	if !ok {
		return false
	}
	switch s {
	case "total":
		return false
	case "consecutive":
		return true
	}
	d.addf(line, o.child("transport_failures"), "must be total or consecutive, got %s", clip(s))
	return false
}

func (d *decoder) escalation(o *object) pollwarden.EscalationSpec {
	ext := o.obj("extension", false, "time", "status_requests", "max_time", "max_status_requests")
	e := pollwarden.EscalationSpec{
		ExtensionTime:     ext.span("time", defaultExtensionTime),
		ExtensionRequests: ext.limit("status_requests", defaultExtensionChecks),
	}
	d.extensionBounds(ext, &e)
	if s, line, ok := o.str("console_url", false); ok {
		s, msg := d.resolve(s)
		if msg == "" {
			_, msg = checkTemplate(s, d.known...)
		}
		if msg != "" && !d.baseBad {
			d.addf(line, o.child("console_url"), "%s", msg)
		}
		e.ConsoleURL = s
	}
	return e
}

// extensionBounds reads escalation.extension.max_time and
// .max_status_requests: the most an agent's asked extension may be
// offered as. Each is at least the fixed amount it bounds, since the
// fixed amount is always offered.
func (d *decoder) extensionBounds(ext *object, e *pollwarden.EscalationSpec) {
	if t := ext.span("max_time", 0); t > 0 && t < e.ExtensionTime {
		v, _ := ext.get("max_time", false)
		d.addf(v.Line, ext.child("max_time"), "must be at least escalation.extension.time (%s), got %s",
			pollwarden.ShortDuration(e.ExtensionTime), clip(v.Value))
	} else {
		e.ExtensionMaxTime = t
	}
	if n := ext.limit("max_status_requests", 0); n > 0 && n < e.ExtensionRequests {
		v, _ := ext.get("max_status_requests", false)
		d.addf(v.Line, ext.child("max_status_requests"), "must be at least escalation.extension.status_requests (%d), got %d",
			e.ExtensionRequests, n)
	} else {
		e.ExtensionMaxRequests = n
	}
}

// cancel decodes the optional cancel action; its origin must be allowed,
// since it carries the status credential.
func (d *decoder) cancel(o *object, c *pollwarden.ContractSpec) *pollwarden.Action {
	if !o.present {
		return nil
	}
	a := &pollwarden.Action{Method: "POST"}
	if s, line, ok := o.str("url", true); ok {
		a.URL = d.originURL(o, line, s, c, "", d.known...)
	}
	if m, line, ok := o.str("method", false); ok {
		a.Method = d.method(line, o.child("method"), m)
	}
	if v, ok := o.get("body", false); ok {
		if a.Method == "GET" || a.Method == "HEAD" {
			d.addf(o.lineOf("body"), o.child("body"), "a %s cancel sends no body; use POST or remove body", a.Method)
		} else {
			a.Body = d.body(o.child("body"), v)
		}
	}
	a.Idempotent = o.boolean("idempotent")
	return a
}

// originURL resolves a URL template of a request that carries the
// status credential (cancel, a session handshake, submit, a result
// fetch) under base_url and
// reports, at line, a template that does not read or an origin outside
// the status call's; why is added to a template problem.
func (d *decoder) originURL(o *object, line int, raw string, c *pollwarden.ContractSpec, why string, known ...string) string {
	u, msg := d.resolve(raw)
	var origin Origin
	if msg == "" {
		origin, msg = checkTemplate(u, known...)
	}
	switch {
	case msg != "" && d.baseBad:
	case msg != "":
		d.addf(line, o.child("url"), "%s%s", msg, why)
	case !allowedBy(AllowedOrigins(c), origin) && statusURLReadable(c):
		d.addf(line, o.child("url"), "origin %s is not among the status call's origins (status.url and status.allowed_hosts)", origin)
	}
	return u
}

// statusURLReadable says whether status.url gave an origin, so that a
// broken status.url is reported once, not again on each other URL.
func statusURLReadable(c *pollwarden.ContractSpec) bool {
	_, ok := templateOrigin(c.Status.URL)
	return ok
}

// validName reports whether s matches [a-z0-9-]+.
func validName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return s != ""
}

// topName is the value of a mapping's name key, for messages; "?" when
// it has none.
func topName(root *yaml.Node) string {
	root = resolve(root)
	if root != nil && root.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if k, v := resolve(root.Content[i]), resolve(root.Content[i+1]); k != nil && k.Value == "name" && v != nil && v.Kind == yaml.ScalarNode {
				return v.Value
			}
		}
	}
	return "(this file)"
}

// siblings finds a base as dir/NAME.yaml (or .yml), when that file's own
// name is NAME.
func siblings(dir string) BaseLookup {
	return func(name string, skip func(string) bool) (Base, bool) {
		if !validName(name) {
			return Base{}, false
		}
		for _, ext := range []string{".yaml", ".yml"} {
			p := filepath.Join(dir, name+ext)
			if skip(p) {
				continue
			}
			data, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			if root, probs := document(data); len(probs) == 0 && topName(root) == name {
				return Base{Source: p, Data: data}, true
			}
		}
		return Base{}, false
	}
}
