package contract

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/uritemplate"
)

// MaxResultBytes is the largest max_bytes a result fetch may declare
// (16 GiB): a bound, not a wish, so that a typo cannot make it endless.
const MaxResultBytes = 16 << 30

// nextTokenVar is where a paged fetch puts the next page's token.
const nextTokenVar = "next_token"

// Bounds of a paged result fetch.
const (
	defaultMaxPages = 100
	maxMaxPages     = 10000
)

// resultFetch decodes result.fetch. Its URL and body templates may use
// {job_id}, the declared vars and the required result fields by their
// path (and {next_token} when paged); "{+field}" alone takes a field
// holding a whole URL, whose origin is then checked when it is known, at
// fetch time. A method other than GET must be declared a documented read.
func (d *decoder) resultFetch(o *object, c *pollwarden.ContractSpec) *pollwarden.ResultFetch {
	if !o.present {
		return nil
	}
	f := &pollwarden.ResultFetch{Method: "GET"}
	known := slices.Clone(d.known)
	for _, r := range c.Result.Require {
		if r.Path != "" {
			known = append(known, r.Path)
		}
	}
	if p, line, ok := o.str("next", false); ok {
		f.Next = p
		d.checkPath(line, o.child("next"), p)
		known = append(known, nextTokenVar)
	}
	if s, line, ok := o.str("url", true); ok {
		if name, whole := wholeURLVar(s); whole {
			f.URL = s
			if !slices.Contains(known, name) {
				d.addf(line, o.child("url"), "unknown variable {%s}: a whole-URL template must name a field of result.require", name)
			} else if k := fieldKind(c, name); k != pollwarden.KindURL {
				d.addf(line, o.child("url"), "{+%s} uses a field as the whole URL; declare it in result.require with kind: url", name)
			}
		} else {
			f.URL = d.originURL(o, line, s, c, "", known...)
		}
	}
	methodLine := o.lineOf("method")
	if m, line, ok := o.str("method", false); ok {
		f.Method, methodLine = d.method(line, o.child("method"), m), line
	}
	f.Safe = o.boolean("safe")
	switch get := f.Method == "GET"; {
	case get && f.Safe:
		d.addf(o.lineOf("safe"), o.child("safe"), "method GET is safe already; remove safe")
		f.Safe = false
	case !get && !f.Safe:
		d.addf(methodLine, o.child("method"), "a result fetch is a read: %s needs safe: true, the provider's documented word that this call only reads", f.Method)
	}
	if v, ok := o.get("body", false); ok {
		if f.Method == "GET" {
			d.addf(o.lineOf("body"), o.child("body"), "a GET result fetch sends no body; give method (with safe: true) or remove body")
		} else {
			saved := d.known
			d.known = known
			f.Body = d.body(o.child("body"), v)
			d.known = saved
		}
	}
	if f.Next != "" && !strings.Contains(f.URL+f.Body, "{"+nextTokenVar+"}") {
		d.addf(o.lineOf("next"), o.child("next"), "the next page's token goes nowhere: use {%s} in url or body", nextTokenVar)
	}
	if p, line, ok := o.str("error_path", false); ok {
		f.ErrorPath = p
		d.checkPath(line, o.child("error_path"), p)
	}
	if f.Next != "" {
		f.MaxPages = o.integer("max_pages", defaultMaxPages, 1)
		if f.MaxPages > maxMaxPages {
			d.addf(o.lineOf("max_pages"), o.child("max_pages"), "must be at most %d, got %d", maxMaxPages, f.MaxPages)
		}
	} else if o.has("max_pages") {
		d.addf(o.lineOf("max_pages"), o.child("max_pages"), "bounds a paged fetch; give next (where the next page's token is) or remove max_pages")
	}
	if _, ok := o.get("max_bytes", true); ok {
		n := o.integer("max_bytes", 0, 1)
		if n > MaxResultBytes {
			d.addf(o.lineOf("max_bytes"), o.child("max_bytes"), "must be at most %d (16 GiB), got %d", MaxResultBytes, n)
			n = 0
		}
		f.MaxBytes = int64(n)
	}
	f.MaxFetches = o.integer("max_fetches", pollwarden.DefaultMaxFetches, 1)
	if f.MaxFetches > pollwarden.MaxMaxFetches {
		d.addf(o.lineOf("max_fetches"), o.child("max_fetches"), "must be at most %d, got %d", pollwarden.MaxMaxFetches, f.MaxFetches)
		f.MaxFetches = pollwarden.DefaultMaxFetches
	}
	return f
}

// wholeURLVar reports whether tmpl is exactly "{+name}".
func wholeURLVar(tmpl string) (string, bool) {
	if !strings.HasPrefix(tmpl, "{+") || !strings.HasSuffix(tmpl, "}") {
		return "", false
	}
	name := tmpl[2 : len(tmpl)-1]
	if name == "" || strings.ContainsAny(name, "{},*:") {
		return "", false
	}
	return name, true
}

func fieldKind(c *pollwarden.ContractSpec, path string) pollwarden.ResultKind {
	for _, r := range c.Result.Require {
		if r.Path == path {
			return r.Kind
		}
	}
	return ""
}

// ResultFetchURL builds the URL of op's result fetch (its first page)
// from the contract's template, op's job id and variables and its
// validated result fields, and checks it with CheckOrigin: a field
// pointing at another origin is refused before anything is sent, and the
// message never repeats the URL (only its origin), which a provider wrote.
func ResultFetchURL(c *pollwarden.ContractSpec, op *pollwarden.Operation) (string, error) {
	p, err := NewResultPager(c, op)
	if err != nil {
		return "", err
	}
	u, _, err := p.Page("")
	return u, err
}

// ResultPager builds each request of one operation's result fetch: the
// URL and the body, the next page's token filled in where the contract
// says {next_token} ("" for the first page).
type ResultPager struct {
	c    *pollwarden.ContractSpec
	vars map[string]string
}

// NewResultPager gathers the names a result fetch's templates may use:
// {job_id}, op's variables and its validated result fields by path.
func NewResultPager(c *pollwarden.ContractSpec, op *pollwarden.Operation) (*ResultPager, error) {
	if c == nil || c.ResultFetch == nil {
		return nil, refusef("contract %s documents no result fetch (result.fetch); the result fields on the operation are its whole result", contractName(c))
	}
	vars := withJob(op.ProviderJobID, op.Vars)
	if op.ProviderJobID == "" {
		delete(vars, jobIDVar)
	}
	if len(op.Result) > 0 {
		var fields map[string]any
		if err := json.Unmarshal(op.Result, &fields); err != nil {
			return nil, refusef("the operation's result fields cannot be read: %v", err)
		}
		for k, v := range fields {
			if _, taken := vars[k]; taken {
				continue
			}
			switch v := v.(type) {
			case string:
				vars[k] = v
			case float64, bool:
				vars[k] = fmt.Sprint(v)
			}
		}
	}
	return &ResultPager{c: c, vars: vars}, nil
}

// Page returns the URL and body (nil for none) of the request for the
// page after token, its URL checked against the contract's origins.
func (p *ResultPager) Page(token string) (string, []byte, error) {
	f := p.c.ResultFetch
	vars := p.vars
	if f.Paged() {
		vars = maps.Clone(p.vars)
		vars[nextTokenVar] = token
	}
	body, err := fillBody(f.Body, vars, "result fetch body", f.Paged())
	if err != nil {
		return "", nil, err
	}
	if name, whole := wholeURLVar(f.URL); whole {
		u, ok := vars[name]
		if !ok || u == "" {
			return "", nil, refusef("the result fetch needs the result field %s and the operation has none", name)
		}
		if err := CheckOrigin(p.c, u); err != nil {
			return "", nil, refusef("result field %s: %v; nothing sent", name, err)
		}
		return u, body, nil
	}
	if _, err := uritemplate.Parse(f.URL); err != nil {
		return "", nil, refusef("the contract's result fetch URL is malformed: %v", err)
	}
	u, err := ExpandURL(p.c, f.URL, vars)
	return u, body, err
}

// ResultPage reads one answer of a result fetch: the provider's error
// when the contract's error_path finds one (then the answer is not the
// result), and the next page's token when the fetch is paged ("" on the
// last page). An answer that is not JSON has neither.
func ResultPage(c *pollwarden.ContractSpec, raw []byte) (next, problem string) {
	f := c.ResultFetch
	if f == nil || (f.ErrorPath == "" && f.Next == "") {
		return "", ""
	}
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		if f.Paged() {
			return "", "a page of the result is not JSON, so its next page cannot be found"
		}
		return "", ""
	}
	if f.ErrorPath != "" {
		if jp, err := compileExpr(f.ErrorPath); err == nil {
			if e := value(jp, doc); present(e) {
				return "", "the provider answered an error instead of the result: " + errorText(e)
			}
		}
	}
	if f.Paged() {
		if jp, err := compileExpr(f.Next); err == nil {
			next = scalarText(value(jp, doc))
		}
	}
	return next, ""
}

// present is JMESPath truth: not null, false, "", an empty list or map.
func present(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// errorText is a provider error as a short line: a JSON-RPC error's code
// and message, or the value as JSON.
func errorText(e any) string {
	if m, ok := e.(map[string]any); ok {
		if msg, ok := m["message"].(string); ok {
			if code, ok := m["code"].(float64); ok {
				return fmt.Sprintf("%s (code %v)", clip(msg), code)
			}
			return clip(msg)
		}
	}
	b, _ := json.Marshal(e)
	return clip(string(b))
}

func contractName(c *pollwarden.ContractSpec) string {
	if c == nil {
		return "(none)"
	}
	return c.Name
}
