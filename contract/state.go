package contract

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jmespath/go-jmespath"
	"go.yaml.in/yaml/v3"

	"github.com/pollwarden/pollwarden"
)

// state decodes the state table (R2). A value may sit in one class only:
// a value that is both pending and success would make the table ambiguous.
func (d *decoder) state(o *object) pollwarden.StateTable {
	t := pollwarden.StateTable{}
	if o.has("header") {
		t.Header = d.stateHeader(o)
	} else if p, line, ok := o.str("path", true); ok {
		d.checkPath(line, o.child("path"), p)
		t.Path = p
	}
	t.CaseInsensitive = o.boolean("case_insensitive")
	t.RawPath = d.optPath(o, "raw")
	first := map[string]string{} // value (folded when case-insensitive) -> "state.<class>" where first listed
	class := func(key string) []string {
		var out []string
		for _, it := range o.strs(key) {
			v := it.node.Value
			k := v
			if t.CaseInsensitive {
				k = strings.ToLower(v)
			}
			switch prev, dup := first[k]; {
			case v == "":
				d.addf(it.line, it.path, "a state value may not be empty")
			case dup && prev == o.child(key):
				d.addf(it.line, it.path, "%s is listed twice in %s", clip(v), prev)
			case dup:
				d.addf(it.line, it.path, "%s is already listed in %s; a value may appear in only one list", clip(v), prev)
			default:
				first[k] = o.child(key)
				out = append(out, v)
			}
		}
		return out
	}
	t.Pending = class("pending")
	t.Success = class("success")
	t.Failure = class("failure")
	t.Cancelled = class("cancelled")
	t.Expired = class("expired")
	for _, k := range []struct {
		key  string
		vals []string
	}{{"pending", t.Pending}, {"success", t.Success}} {
		if key := k.key; len(k.vals) == 0 && !o.bad {
			d.addf(o.lineOf(key), o.child(key), "at least one %s value is required", key)
		}
	}
	t.StatusCodes = d.statusCodes(o.obj("status_codes", false), first, t.CaseInsensitive)
	if u, line, ok := o.str("unlisted", false); ok {
		switch u {
		case "stop":
		case "pending":
			t.UnlistedPending = true
		default:
			d.addf(line, o.child("unlisted"), "must be stop or pending, got %s", clip(u))
		}
	}
	return t
}

// result decodes what a success must carry (R3).
func (d *decoder) result(o *object) pollwarden.ResultSpec {
	r := pollwarden.ResultSpec{ErrorPath: d.optPath(o, "error_path")}
	var at []item // where each of r.Require was written
	for _, it := range o.list("require") {
		if isNull(it.node) || it.node.Kind != yaml.MappingNode {
			d.addf(it.line, it.path, "must be a mapping {path, kind} or {header, kind}, got %s", kindName(it.node))
			continue
		}
		fo := d.object(it.path, it.line, it.node, []string{"path", "header", "kind"})
		f := pollwarden.Field{Kind: pollwarden.KindPresent}
		if fo.has("header") {
			f.Header = d.fieldHeader(fo)
		} else if p, line, ok := fo.str("path", true); ok {
			d.checkPath(line, fo.child("path"), p)
			f.Path = p
		}
		if k, line, ok := fo.str("kind", false); ok {
			switch kind := pollwarden.ResultKind(k); kind {
			case pollwarden.KindURL, pollwarden.KindString, pollwarden.KindNumber,
				pollwarden.KindBool, pollwarden.KindPresent:
				f.Kind = kind
			default:
				d.addf(line, fo.child("kind"), "must be one of url, string, number, bool, present; got %s", clip(k))
			}
		}
		r.Require = append(r.Require, f)
		at = append(at, it)
	}
	d.uniqueFields(at, r.Require)
	return r
}

// optPath decodes an optional JMESPath expression.
func (d *decoder) optPath(o *object, key string) string {
	p, line, ok := o.str(key, false)
	if !ok {
		return ""
	}
	d.checkPath(line, o.child(key), p)
	return p
}

func (d *decoder) checkPath(line int, path, expr string) {
	if _, err := compileExpr(expr); err != nil {
		d.addf(line, path, "%v", err)
	}
}

// compileExpr compiles a JMESPath expression; the library is third-party
// code, so a panic on odd input is turned into an error.
func compileExpr(expr string) (jp *jmespath.JMESPath, err error) {
	if expr == "" {
		return nil, fmt.Errorf("must not be empty")
	}
	defer func() {
		if r := recover(); r != nil {
			jp, err = nil, fmt.Errorf("not a valid JMESPath expression %s", clip(expr))
		}
	}()
	jp, err = jmespath.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("not a valid JMESPath expression %s: %v", clip(expr), err)
	}
	return jp, nil
}

// statusCodes decodes state.status_codes: HTTP status → a listed state.
// Only 2xx, 404 and 410 may be mapped: 401, 403, 429 and 5xx keep their
// own meaning (authorization, rate limit, transport failure), which a
// contract must not hide.
func (d *decoder) statusCodes(o *object, listed map[string]string, fold bool) map[int]string {
	if !o.present {
		return nil
	}
	out := map[int]string{}
	for _, key := range o.keys {
		line := o.lineOf(key)
		code, err := strconv.Atoi(key)
		if err != nil || !(code >= 200 && code <= 299 || code == 404 || code == 410) {
			d.addf(line, o.child(key), "must be an HTTP status 200 to 299, 404 or 410 (401, 403, 429 and 5xx keep their meaning)")
			continue
		}
		v, vline, ok := o.str(key, true)
		if !ok {
			continue
		}
		k := v
		if fold {
			k = strings.ToLower(v)
		}
		if _, isListed := listed[k]; !isListed {
			d.addf(vline, o.child(key), "%s is in none of the state lists", clip(v))
			continue
		}
		out[code] = v
	}
	return out
}
