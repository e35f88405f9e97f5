package contract

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pollwarden/pollwarden"
)

// maxSubmitAttempts caps a contract's submit.max_attempts: a submission
// is re-sent only with its stored key, and even then a few times at most.
const maxSubmitAttempts = 10

// submit decodes the optional submit block. Its URL carries the status
// credential, so its origin must be one of the status call's; a submission
// is sent more than once only under a documented idempotency key.
func (d *decoder) submit(o *object, c *pollwarden.ContractSpec) *pollwarden.SubmitSpec {
	if !o.present {
		return nil
	}
	s := &pollwarden.SubmitSpec{Method: "POST"}
	if u, line, ok := o.str("url", true); ok {
		s.URL = d.originURL(o, line, u, c, "", d.known...)
	}
	if m, line, ok := o.str("method", false); ok {
		s.Method = d.method(line, o.child("method"), m)
	}
	s.Headers = d.headers(o.obj("headers", false), c.Status.Credential)
	if loc, line, ok := o.str("status_location", false); ok {
		s.StatusLocation = loc
		kind, rest, _ := strings.Cut(loc, ":")
		switch {
		case kind == "header" && isToken(rest):
		case kind == "body" && rest != "":
			d.checkPath(line, o.child("status_location"), rest)
		default:
			d.addf(line, o.child("status_location"), "must be header:NAME (header:Operation-Location) or body:JMESPATH, got %s", clip(loc))
		}
	}
	// An answer may name its job only by its status resource (an Azure
	// 202 with an empty body and Operation-Location): then that resource
	// is the job, as with --status-url, and job_id_path may be left out.
	if p, line, ok := o.str("job_id_path", s.StatusLocation == ""); ok {
		s.JobIDPath = p
		d.checkPath(line, o.child("job_id_path"), p)
	}
	if h, line, ok := o.str("idempotency_key_header", false); ok {
		if !isToken(h) {
			d.addf(line, o.child("idempotency_key_header"), "must be a header name such as Idempotency-Key, got %s", clip(h))
		}
		s.IdempotencyKeyHeader = h
	}
	def := 1
	if s.IdempotencyKeyHeader != "" {
		def = 3
	}
	s.MaxAttempts = o.integer("max_attempts", def, 1)
	switch {
	case s.MaxAttempts > 1 && s.IdempotencyKeyHeader == "":
		d.addf(o.lineOf("max_attempts"), o.child("max_attempts"),
			"must be 1 without idempotency_key_header: a submission without a documented key is never sent twice")
	case s.MaxAttempts > maxSubmitAttempts:
		d.addf(o.lineOf("max_attempts"), o.child("max_attempts"), "must be at most %d, got %d", maxSubmitAttempts, s.MaxAttempts)
	}
	return s
}

// SubmitURL expands the contract's submit URL with the operation's
// variables and checks its origin.
func SubmitURL(c *pollwarden.ContractSpec, vars map[string]string) (string, error) {
	if c.Submit == nil {
		return "", refusef("contract %s has no submit block: pollwarden cannot submit its jobs", c.Name)
	}
	return ExpandURL(c, c.Submit.URL, vars)
}

// SubmitAnswer reads the job id and the status location from a
// submission's answer: header gives an answer header's value, body is
// the answer's JSON body. problem says what is missing; the values are
// the provider's, not yet checked or redacted.
func SubmitAnswer(s *pollwarden.SubmitSpec, header func(string) string, body []byte) (jobID, location, problem string) {
	var doc any
	parsed := false
	read := func(expr string) string {
		if !parsed {
			parsed = true
			if json.Unmarshal(body, &doc) != nil {
				doc = nil
			}
		}
		jp, err := compileExpr(expr)
		if err != nil || doc == nil {
			return ""
		}
		return scalarText(value(jp, doc))
	}
	if s.JobIDPath != "" {
		jobID = read(s.JobIDPath)
	}
	kind, rest, _ := strings.Cut(s.StatusLocation, ":")
	switch kind {
	case "header":
		location = header(rest)
	case "body":
		location = read(rest)
	}
	switch {
	case s.JobIDPath != "" && jobID == "":
		problem = "the answer has no job id at " + s.JobIDPath
	case s.StatusLocation != "" && location == "":
		problem = "the answer has no status location at " + s.StatusLocation
	}
	return jobID, location, problem
}

// scalarText is a string value as it is, a number as written, anything
// else (an object, a list, null) nothing: a job id or a URL is a scalar.
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

// SubmitVars checks the variables of a submission like OperationVars.
// The status URL's own variables are needed only when the answer does
// not name the status resource itself (no status_location): an Azure
// submission answered with Operation-Location needs no variable of the
// status.url template.
func SubmitVars(c *pollwarden.ContractSpec, given map[string]string) (map[string]string, error) {
	fromAnswer := c != nil && c.Submit != nil && c.Submit.StatusLocation != ""
	return OperationVars(c, given, fromAnswer)
}
