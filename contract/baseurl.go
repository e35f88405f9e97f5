package contract

import (
	"strings"
)

// baseURL decodes base_url: scheme, host, optional port and path prefix,
// written out in full (no variables, query or fragment), since it decides
// where every path template of the contract, and its credential, goes.
// The returned prefix has no trailing slash.
func (d *decoder) baseURL(top *object) (string, Origin, bool) {
	raw, line, ok := top.str("base_url", false)
	if !ok {
		return "", Origin{}, false
	}
	problem := func(msg string) (string, Origin, bool) {
		d.addf(line, "base_url", "%s", msg)
		return "", Origin{}, false
	}
	if strings.ContainsAny(raw, "{}") {
		return problem("may not hold a template variable: the scheme, host and port are never taken from a variable")
	}
	o, err := ParseOrigin(raw)
	if err != nil {
		return problem(err.Error())
	}
	_, rest, _ := strings.Cut(raw, "://")
	if strings.ContainsAny(rest, "?#") {
		return problem("may not have a query or fragment (scheme, host, optional port and path prefix)")
	}
	return strings.TrimRight(raw, "/"), o, true
}

// resolve puts a template that starts with "/" under base_url. It returns
// the template unchanged otherwise, and a message when a path template has
// no base_url to go under.
func (d *decoder) resolve(tmpl string) (string, string) {
	if !strings.HasPrefix(tmpl, "/") {
		return tmpl, ""
	}
	if strings.HasPrefix(tmpl, "//") {
		return tmpl, "a template starting with // would name a host; write a path (/v1/…) or a full URL"
	}
	if d.base == "" {
		return tmpl, "a path template needs base_url (the provider's origin), or write a full URL"
	}
	return d.base + tmpl, ""
}
