package contract

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/uritemplate"
)

// MaxResultBytes is the largest max_bytes a result fetch may declare
// (16 GiB): a bound, not a wish, so that a typo cannot make it endless.
const MaxResultBytes = 16 << 30

// resultFetch decodes result.fetch. Its template may use {job_id}, the
// declared vars and the required result fields by their path; "{+field}"
// alone takes a field holding a whole URL, whose origin is then checked
// when it is known, at fetch time.
func (d *decoder) resultFetch(o *object, c *pollwarden.Contract) *pollwarden.ResultFetch {
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
	if s, line, ok := o.str("url", true); ok {
		if name, whole := wholeURLVar(s); whole {
			f.URL = s
			if !slices.Contains(known, name) {
				d.addf(line, o.child("url"), "unknown variable {%s}: a whole-URL template must name a field of result.require", name)
			} else if k := fieldKind(c, name); k != pollwarden.KindURL {
				d.addf(line, o.child("url"), "{+%s} uses a field as the whole URL; declare it in result.require with kind: url", name)
			}
		} else {
			s, msg := d.resolve(s)
			f.URL = s
			var origin Origin
			if msg == "" {
				origin, msg = checkTemplate(s, known...)
			}
			switch {
			case msg != "" && d.baseBad:
			case msg != "":
				d.addf(line, o.child("url"), "%s", msg)
			case !slices.Contains(AllowedOrigins(c), origin) && statusURLReadable(c):
				d.addf(line, o.child("url"), "origin %s is not among the status call's origins (status.url and status.allowed_hosts)", origin)
			}
		}
	}
	if m, line, ok := o.str("method", false); ok {
		if m = strings.ToUpper(m); m != "GET" {
			d.addf(line, o.child("method"), "a result fetch is a read and must be GET, got %s", clip(m))
		}
		f.Method = "GET"
	}
	if _, ok := o.get("max_bytes", true); ok {
		n := o.integer("max_bytes", 0, 1)
		if n > MaxResultBytes {
			d.addf(o.lineOf("max_bytes"), o.child("max_bytes"), "must be at most %d (16 GiB), got %d", MaxResultBytes, n)
			n = 0
		}
		f.MaxBytes = int64(n)
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

func fieldKind(c *pollwarden.Contract, path string) pollwarden.ResultKind {
	for _, r := range c.Result.Require {
		if r.Path == path {
			return r.Kind
		}
	}
	return ""
}

// ResultFetchURL builds the URL of op's result fetch from the contract's
// template, op's job id and variables and its validated result fields,
// and checks it with CheckOrigin: a field pointing at another origin is
// refused before anything is sent, and the message never repeats the URL
// (only its origin), which a provider wrote.
func ResultFetchURL(c *pollwarden.Contract, op *pollwarden.Operation) (string, error) {
	if c == nil || c.ResultFetch == nil {
		return "", refusef("contract %s documents no result fetch (result.fetch); the result fields on the operation are its whole result", contractName(c))
	}
	vars := withJob(op.ProviderJobID, op.Vars)
	if op.ProviderJobID == "" {
		delete(vars, jobIDVar)
	}
	if len(op.Result) > 0 {
		var fields map[string]any
		if err := json.Unmarshal(op.Result, &fields); err != nil {
			return "", refusef("the operation's result fields cannot be read: %v", err)
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
	tmpl := c.ResultFetch.URL
	if name, whole := wholeURLVar(tmpl); whole {
		u, ok := vars[name]
		if !ok || u == "" {
			return "", refusef("the result fetch needs the result field %s and the operation has none", name)
		}
		if err := CheckOrigin(c, u); err != nil {
			return "", refusef("result field %s: %v; nothing sent", name, err)
		}
		return u, nil
	}
	if _, err := uritemplate.Parse(tmpl); err != nil {
		return "", refusef("the contract's result fetch URL is malformed: %v", err)
	}
	return ExpandURL(c, tmpl, vars)
}

func contractName(c *pollwarden.Contract) string {
	if c == nil {
		return "(none)"
	}
	return c.Name
}
