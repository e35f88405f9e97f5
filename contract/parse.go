package contract

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
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
// names the file on every line.
func Load(path string) (*pollwarden.Contract, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read contract: %w", err)
	}
	c, err := Parse(data)
	if ps, ok := errors.AsType[*Problems](err); ok {
		ps.File = path
	}
	return c, err
}

// Parse reads a contract from YAML (or JSON, which is YAML) and checks it.
// On failure the error is a *Problems listing every problem with its line.
func Parse(data []byte) (*pollwarden.Contract, error) {
	root, probs := document(data)
	if len(probs) > 0 {
		return nil, problemsOf(probs)
	}
	d := &decoder{}
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
		return nil, []Problem{yamlProblem(err)}
	}
	if err != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || isNull(resolve(doc.Content[0])) {
		return nil, []Problem{{Line: 1, Msg: "empty file: expected a contract (a mapping with version, name, status, state, …)"}}
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
func (d *decoder) contract(root *yaml.Node) *pollwarden.Contract {
	top := d.object("", root.Line, root, []string{
		"version", "name", "status", "state", "result", "hints",
		"not_found", "backoff", "limits", "escalation", "cancel",
	})
	if top.bad {
		return nil
	}
	status := top.obj("status", true, "url", "method", "unsafe_method", "headers",
		"credential", "timeout", "max_body_bytes", "allowed_hosts", "request_id_header")
	state := top.obj("state", true, "path", "pending", "success", "failure", "cancelled", "expired", "unlisted")
	c := &pollwarden.Contract{
		Version: d.version(top),
		Name:    d.name(top),
		Status:  d.status(status),
		State:   d.state(state),
		Result:  d.result(top.obj("result", false, "require", "error_path")),
		Hints:   d.hints(top.obj("hints", false, "poll_after_seconds", "next_check_at", "job_expires_at")),
	}
	nf := top.obj("not_found", false, "pending_for")
	c.NotFoundPendingFor, _ = nf.duration("pending_for", 0, true)
	c.Backoff = d.backoff(top.obj("backoff", false, "base", "max"))
	c.Limits = d.limits(top.obj("limits", false, "deadline", "max_status_requests", "max_transport_failures", "max_rate_limited", "max_requests_per_second"))
	esc := top.obj("escalation", false, "extension", "console_url", "remind_after", "expire_after", "on_expiry")
	c.Escalation = d.escalation(esc)
	c.Cancel = d.cancel(top.obj("cancel", false, "url", "method", "idempotent"), c)
	d.decisionTimes(esc, c)
	return c
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
	return pollwarden.HintPaths{
		PollAfterSeconds: d.optPath(o, "poll_after_seconds"),
		NextCheckAt:      d.optPath(o, "next_check_at"),
		JobExpiresAt:     d.optPath(o, "job_expires_at"),
	}
}

func (d *decoder) backoff(o *object) pollwarden.Backoff {
	base, baseOK := o.duration("base", defaultBackoffBase, false)
	maxDelay, maxOK := o.duration("max", defaultBackoffMax, false)
	if maxDelay < base && (baseOK || maxOK) {
		d.addf(o.lineOf("max"), o.child("max"), "must be at least base (%s), got %s", base, maxDelay)
	}
	return pollwarden.Backoff{Base: base, Max: maxDelay}
}

func (d *decoder) limits(o *object) pollwarden.Limits {
	return pollwarden.Limits{
		Deadline:             o.span("deadline", defaultDeadline),
		MaxStatusRequests:    o.limit("max_status_requests", defaultMaxRequests),
		MaxTransportFailures: o.limit("max_transport_failures", defaultMaxTransport),
		MaxRateLimited:       o.limit("max_rate_limited", defaultMaxRateLimited),
		MaxRequestsPerSecond: o.rate("max_requests_per_second"),
	}
}

func (d *decoder) escalation(o *object) pollwarden.EscalationSpec {
	ext := o.obj("extension", false, "time", "status_requests")
	e := pollwarden.EscalationSpec{
		ExtensionTime:     ext.span("time", defaultExtensionTime),
		ExtensionRequests: ext.limit("status_requests", defaultExtensionChecks),
	}
	if s, line, ok := o.str("console_url", false); ok {
		if _, msg := checkTemplate(s, jobIDVar); msg != "" {
			d.addf(line, o.child("console_url"), "%s", msg)
		}
		e.ConsoleURL = s
	}
	return e
}

// cancel decodes the optional cancel action; its origin must be allowed,
// since it carries the status credential.
func (d *decoder) cancel(o *object, c *pollwarden.Contract) *pollwarden.Action {
	if !o.present {
		return nil
	}
	a := &pollwarden.Action{Method: "POST"}
	if s, line, ok := o.str("url", true); ok {
		a.URL = s
		origin, msg := checkTemplate(s, jobIDVar)
		switch {
		case msg != "":
			d.addf(line, o.child("url"), "%s", msg)
		case !slices.Contains(AllowedOrigins(c), origin) && statusURLReadable(c):
			d.addf(line, o.child("url"), "origin %s is not among the status call's origins (status.url and status.allowed_hosts)", origin)
		}
	}
	if m, line, ok := o.str("method", false); ok {
		a.Method = d.method(line, o.child("method"), m)
	}
	a.Idempotent = o.boolean("idempotent")
	return a
}

// statusURLReadable says whether status.url gave an origin, so that a
// broken status.url is reported once, not again on each other URL.
func statusURLReadable(c *pollwarden.Contract) bool {
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
