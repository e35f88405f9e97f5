package contract

import (
	"net/url"
	"slices"
	"strings"

	"github.com/pollwarden/pollwarden/uritemplate"
)

// checkTemplate checks a URL template of a contract file and returns its
// origin. The scheme, host and port must be written out before the first
// variable: a value never picks where the credential goes. The template
// is not echoed: it could carry user credentials. known lists the
// variables the template may use.
func checkTemplate(raw string, known ...string) (Origin, string) {
	if raw == "" {
		return Origin{}, "must not be empty"
	}
	t, err := uritemplate.Parse(raw)
	if err != nil {
		return Origin{}, err.Error()
	}
	for _, name := range t.Names() {
		if !slices.Contains(known, name) {
			return Origin{}, "unknown variable {" + name + "}: only {" + strings.Join(known, "}, {") + "} is defined"
		}
	}
	o, msg := literalOrigin(raw, t)
	if msg != "" {
		return Origin{}, msg
	}
	sample := map[string]string{}
	for _, name := range t.Names() {
		sample[name] = "x"
	}
	if _, err := url.Parse(t.Expand(sample)); err != nil {
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err
		}
		return Origin{}, "not a valid URL: " + err.Error()
	}
	return o, ""
}

// literalOrigin reads the scheme and authority from the text before the
// template's first expression.
func literalOrigin(raw string, t *uritemplate.Template) (Origin, string) {
	exprs := t.Exprs()
	prefix := raw
	if len(exprs) > 0 {
		prefix = raw[:exprs[0].Start]
	}
	const variableThere = "a variable may not set the scheme, host or port; write them out and use {job_id} in the path or query"
	scheme, rest, ok := strings.Cut(prefix, "://")
	if !ok {
		if strings.Contains(raw, "://") {
			return Origin{}, variableThere
		}
		return Origin{}, "must be an absolute http or https URL"
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	} else if len(exprs) > 0 && !strings.ContainsRune("/?", rune(exprs[0].Op)) {
		return Origin{}, variableThere
	}
	o, err := ParseOrigin(scheme + "://" + authority)
	if err != nil {
		return Origin{}, err.Error()
	}
	return o, ""
}

// templateOrigin is the origin of a URL template, when it has a readable one.
func templateOrigin(raw string) (Origin, bool) {
	t, err := uritemplate.Parse(raw)
	if err != nil {
		return Origin{}, false
	}
	o, msg := literalOrigin(raw, t)
	return o, msg == ""
}
