// Package present holds the words and links every medium (console, CLI,
// MCP, audit story, escalation options) shows for the same fact, so that
// a change to what a person reads is made once and no medium drifts.
package present

import (
	"maps"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/uritemplate"
)

// ConsoleLink expands a contract's escalation.console_url for op with the
// operation's vars and its provider job id, escaped as the request that
// would be sent is. The option label and the console's link both use it,
// so a template naming {owner} or {repo} reads the same in both. ok is
// false when the template does not expand.
func ConsoleLink(tmpl string, op *pollwarden.Operation) (link string, ok bool) {
	vars := maps.Clone(op.Vars)
	if vars == nil {
		vars = map[string]string{}
	}
	if op.ProviderJobID != "" {
		vars["job_id"] = op.ProviderJobID
	}
	out, err := uritemplate.Expand(tmpl, vars)
	if err != nil {
		return "", false
	}
	return out, true
}
