package contract

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/uritemplate"
)

// varName is what a declared variable may be called: a name RFC 6570
// accepts and that reads as one word on a command line (--var NAME=VALUE).
var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// vars decodes the declared template variables. A pattern is required:
// a value lands in a URL, so the contract must say what a value looks
// like; it is matched against the whole value.
func (d *decoder) vars(o *object) map[string]pollwarden.VarSpec {
	if !o.present {
		return nil
	}
	out := make(map[string]pollwarden.VarSpec, len(o.keys))
	for _, name := range o.keys {
		line := o.lineOf(name)
		switch {
		case name == jobIDVar:
			d.addf(line, o.child(name), "{job_id} is always defined by the operation's job id; do not declare it")
			continue
		case !varName.MatchString(name):
			d.addf(line, o.child(name), "a variable name is a letter or _ then letters, digits or _ (at most 64)")
			continue
		}
		vo := o.obj(name, true, "pattern", "default")
		spec := pollwarden.VarSpec{}
		var re *regexp.Regexp
		if p, pline, ok := vo.str("pattern", true); ok {
			var err error
			if re, err = compilePattern(p); err != nil {
				d.addf(pline, vo.child("pattern"), "not a valid regular expression: %v", err)
			}
			spec.Pattern = p
		}
		if def, dline, ok := vo.str("default", false); ok {
			if re != nil && !re.MatchString(def) {
				d.addf(dline, vo.child("default"), "default %s does not match the pattern", clip(def))
			}
			spec.Default, spec.HasDefault = def, true
		}
		out[name] = spec
	}
	return out
}

// compilePattern anchors a variable's pattern at both ends, so that a
// pattern written without ^…$ still constrains the whole value.
func compilePattern(p string) (*regexp.Regexp, error) {
	if p == "" {
		return nil, fmt.Errorf("empty pattern")
	}
	if _, err := regexp.Compile(p); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + p + `)$`)
}

// templateVars is the list of names a template of c may use.
func templateVars(vars map[string]pollwarden.VarSpec) []string {
	return append([]string{jobIDVar}, slices.Sorted(maps.Keys(vars))...)
}

// OperationVars checks the variables a caller gives for one operation and
// returns the values the operation records: every given value, plus the
// default of each declared variable not given. An undeclared name, or a
// value outside its pattern, is refused naming the variable. Unless the
// caller gave a status URL, every variable the status URL template uses
// must end up with a value. The map is nil when the contract declares no
// variables and none is given.
func OperationVars(c *pollwarden.ContractSpec, given map[string]string, haveStatusURL bool) (map[string]string, error) {
	if c == nil {
		return nil, refusef("no contract to check the variables against")
	}
	var problems []string
	declared := slices.Sorted(maps.Keys(c.Vars))
	out := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(given)) {
		val := given[name]
		spec, ok := c.Vars[name]
		switch {
		case name == jobIDVar:
			problems = append(problems, "variable job_id: give the job id as the job id, not as a variable")
			continue
		case !ok:
			if len(declared) == 0 {
				problems = append(problems, fmt.Sprintf("variable %s: contract %s declares no variables", clip(name), c.Name))
			} else {
				problems = append(problems, fmt.Sprintf("variable %s: not declared by contract %s (it declares %s)", clip(name), c.Name, strings.Join(declared, ", ")))
			}
			continue
		}
		re, err := compilePattern(spec.Pattern)
		if err != nil || !re.MatchString(val) {
			problems = append(problems, fmt.Sprintf("variable %s: value %s does not match its pattern %s", name, clip(val), spec.Pattern))
			continue
		}
		out[name] = val
	}
	for _, name := range declared {
		if _, ok := out[name]; !ok && c.Vars[name].HasDefault {
			if _, bad := given[name]; !bad {
				out[name] = c.Vars[name].Default
			}
		}
	}
	if !haveStatusURL {
		if t, err := uritemplate.Parse(c.Status.URL); err == nil {
			for _, name := range t.Names() {
				_, have := out[name]
				_, tried := given[name]
				if name != jobIDVar && !have && !tried {
					problems = append(problems, fmt.Sprintf("variable %s: required by the status URL and has no default", name))
				}
			}
		}
	}
	if len(problems) > 0 {
		return nil, refusef("%s", strings.Join(problems, "; "))
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// withJob adds the job id to an operation's variables for expansion.
func withJob(jobID string, vars map[string]string) map[string]string {
	all := maps.Clone(vars)
	if all == nil {
		all = map[string]string{}
	}
	if jobID != "" {
		all[jobIDVar] = jobID
	}
	return all
}
