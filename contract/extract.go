package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jmespath/go-jmespath"

	"github.com/pollwarden/pollwarden"
)

// Loaded is a contract as loaded and compiled: its data (Contract) and
// its JMESPath expressions, compiled once, which it applies to status
// bodies. It is what every layer passes as "the contract"; it is safe for
// concurrent use.
type Loaded struct {
	c         *pollwarden.ContractSpec
	state     *jmespath.JMESPath
	fields    []compiledField
	errPath   *jmespath.JMESPath
	pollAfter *jmespath.JMESPath
	nextCheck *jmespath.JMESPath
	expires   *jmespath.JMESPath
	// expiresAfter is the delay a relative expiry adds to expires.
	expiresAfter *jmespath.JMESPath
	raw          *jmespath.JMESPath
	// rlPaths holds the rate_limit body paths, by expression.
	rlPaths map[string]*jmespath.JMESPath
	// keep is the set of top-level keys the paths above may read (nil:
	// any), so a large body is decoded only where it is read.
	keep map[string]bool
}

type compiledField struct {
	path string
	jp   *jmespath.JMESPath
	// header, when set, is the lower-case response header the field is
	// read from (jp is nil then).
	header string
}

// Compile precompiles every path of c. It fails only for a contract that
// did not come from Parse (Parse already checks every path).
func Compile(c *pollwarden.ContractSpec) (*Loaded, error) {
	if c == nil {
		return nil, errors.New("contract: Compile: nil contract")
	}
	x := &Loaded{c: c}
	var probs []Problem
	compile := func(path, expr string, optional bool) *jmespath.JMESPath {
		if expr == "" && optional {
			return nil
		}
		jp, err := compileExpr(expr)
		if err != nil {
			probs = append(probs, Problem{Path: path, Msg: err.Error()})
		}
		return jp
	}
	x.state = compile("state.path", c.State.Path, c.State.Header != "")
	for i, f := range c.Result.Require {
		if f.Header != "" {
			x.fields = append(x.fields, compiledField{path: f.Key(), header: f.Key()})
			continue
		}
		jp := compile(fmt.Sprintf("result.require[%d].path", i), f.Path, false)
		x.fields = append(x.fields, compiledField{path: f.Path, jp: jp})
	}
	x.errPath = compile("result.error_path", c.Result.ErrorPath, true)
	x.pollAfter = compile("hints.poll_after_seconds", c.Hints.PollAfterSeconds, true)
	x.nextCheck = compile("hints.next_check_at", c.Hints.NextCheckAt, true)
	x.expires = compile("hints.job_expires_at", c.Hints.JobExpiresAt, true)
	x.expiresAfter = compile("hints.job_expires_at.after", c.Hints.JobExpiresAfter, true)
	x.raw = compile("state.raw", c.State.RawPath, true)
	if rl := c.RateLimit; rl != nil {
		x.rlPaths = map[string]*jmespath.JMESPath{}
		for i, s := range rl.When {
			if s.Path != "" {
				x.rlPaths[s.Path] = compile(fmt.Sprintf("rate_limit.when[%d].path", i), s.Path, false)
			}
		}
		if rl.RetryAfterPath != "" {
			x.rlPaths[rl.RetryAfterPath] = compile("rate_limit.retry_after", rl.RetryAfterPath, false)
		}
	}
	if err := problemsOf(probs); err != nil {
		return nil, err
	}
	exprs := []string{c.State.Path, c.Result.ErrorPath, c.Hints.PollAfterSeconds, c.Hints.NextCheckAt,
		c.Hints.JobExpiresAt, c.Hints.JobExpiresAfter, c.State.RawPath}
	for _, f := range c.Result.Require {
		exprs = append(exprs, f.Path)
	}
	x.keep = topKeys(exprs...)
	return x, nil
}

// Spec returns the contract data it was compiled from.
func (x *Loaded) Spec() *pollwarden.ContractSpec { return x.c }

// Extract reduces a status body to the facts the decision core reads. It
// never fails: what went wrong is in BodyFacts.Problem.
func (x *Loaded) Extract(body []byte) pollwarden.BodyFacts {
	return x.extract(nil, body)
}

// extract is Extract with the answer's headers (lower-case name → value),
// which a state.header or a header field reads.
func (x *Loaded) extract(headers map[string]string, body []byte) pollwarden.BodyFacts {
	var f pollwarden.BodyFacts
	if x.c.Status.Method == "HEAD" {
		body = nil // a HEAD answer has no body; one sent anyway is not read
	}
	if lim := x.c.Status.MaxBodyBytes; lim > 0 && int64(len(body)) > lim {
		f.Problem = fmt.Sprintf("body is larger than max_body_bytes (%d)", lim)
		return f
	}
	fromHeader := x.c.State.Header != ""
	var doc any
	if !fromHeader || len(bytes.TrimSpace(body)) > 0 {
		var err error
		doc, err = decodePruned(body, x.keep)
		switch {
		case err != nil && fromHeader:
			// The state is in a header; a body that is not JSON only
			// leaves the body's fields absent.
			doc = nil
		case err != nil:
			f.Problem = "body is not JSON: " + err.Error()
			return f
		}
	}
	switch v, err := search(x.state, doc); {
	case fromHeader:
		x.headerState(&f, headers)
	case err != nil:
		f.Problem = fmt.Sprintf("state path %q failed: %v", x.c.State.Path, err)
	case v == nil:
		f.Problem = fmt.Sprintf("state path %q gave nothing", x.c.State.Path)
	default:
		if s, ok := v.(string); ok {
			f.State, f.HasState = x.canonical(s), true
			if s != f.State {
				f.ProviderState = s
			}
		} else {
			f.Problem = fmt.Sprintf("state path %q gave %s, not a string", x.c.State.Path, jsonType(v))
		}
	}
	for _, fd := range x.fields {
		if fd.header != "" {
			if v, ok := headers[fd.header]; ok {
				if f.Fields == nil {
					f.Fields = make(map[string]any, len(x.fields))
				}
				f.Fields[fd.path] = v
			}
			continue
		}
		if v, err := search(fd.jp, doc); err == nil && v != nil {
			if f.Fields == nil {
				f.Fields = make(map[string]any, len(x.fields))
			}
			f.Fields[fd.path] = v
		}
	}
	if v, err := search(x.errPath, doc); err == nil && v != nil {
		if raw, err := json.Marshal(v); err == nil {
			f.Error = raw
		}
	}
	if x.raw != nil {
		f.ProviderState = rawText(value(x.raw, doc))
	}
	if f.ProviderState == f.State {
		f.ProviderState = ""
	}
	h := x.c.Hints
	f.PollAfter = delayIn(value(x.pollAfter, doc), h.PollAfterUnit)
	f.NextCheckAt = timeIn(value(x.nextCheck, doc), h.NextCheckAtUnit)
	f.JobExpiresAt = timeIn(value(x.expires, doc), h.JobExpiresAtUnit)
	if x.expiresAfter != nil && f.JobExpiresAt != nil {
		f.JobExpiresAt = relativeExpiry(f.JobExpiresAt, delayIn(value(x.expiresAfter, doc), h.JobExpiresAfterUnit))
	}
	return f
}

// value is the raw value at jp, nil when absent or on error.
func value(jp *jmespath.JMESPath, doc any) any {
	v, err := search(jp, doc)
	if err != nil {
		return nil
	}
	return v
}

// search evaluates jp; a nil jp gives nothing, and a panic inside the
// third-party evaluator becomes an error, since bodies are untrusted.
func search(jp *jmespath.JMESPath, doc any) (v any, err error) {
	if jp == nil {
		return nil, nil
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("evaluation failed: %v", r)
		}
	}()
	return jp.Search(doc)
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// canonical is the state as the contract lists it: under case_insensitive
// a provider's "running" is recorded as the listed "Running", so every
// later comparison (terminal states, the story) sees one spelling.
func (x *Loaded) canonical(s string) string {
	t := x.c.State
	if !t.CaseInsensitive {
		return s
	}
	for _, list := range [][]string{t.Pending, t.Success, t.Failure, t.Cancelled, t.Expired} {
		for _, v := range list {
			if strings.EqualFold(v, s) {
				return v
			}
		}
	}
	return s
}

// ExtractAnswer is Extract for an answer with HTTP status code: when the
// contract maps the code to a state, that is the state, and the body
// (often empty) is read only for result fields and hints.
func (x *Loaded) ExtractAnswer(code int, body []byte) pollwarden.BodyFacts {
	return x.ExtractResponse(code, nil, body)
}

// ExtractResponse is ExtractAnswer with the answer's headers, by
// lower-case name as ResponseHeaders lists them: a state.header or a
// header field reads them.
func (x *Loaded) ExtractResponse(code int, headers map[string]string, body []byte) pollwarden.BodyFacts {
	st, mapped := x.c.State.StatusCodes[code]
	if !mapped {
		return x.extract(headers, body)
	}
	var f pollwarden.BodyFacts
	if len(bytes.TrimSpace(body)) > 0 || x.c.State.Header != "" {
		f = x.extract(headers, body)
	}
	f.Problem, f.State, f.HasState, f.FromStatus = "", st, true, true
	return f
}

// rawText writes the provider's own value for the record: a string as it
// is, anything else as JSON (null, true, a list of condition types),
// clipped so a large value cannot fill the record.
func rawText(v any) string {
	if v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		s = string(b)
	}
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120]) + "…"
	}
	return s
}

// Extractor is the former name of Loaded, kept so that an embedder's code
// still builds.
//
// Deprecated: use Loaded.
type Extractor = Loaded
