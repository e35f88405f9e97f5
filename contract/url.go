package contract

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/uritemplate"
)

// refusal is an error about caller input; errors.Is(err,
// pollwarden.ErrInvalid) holds, so doors can answer "usage error".
type refusal struct{ msg string }

func (e *refusal) Error() string { return e.msg }
func (e *refusal) Unwrap() error { return pollwarden.ErrInvalid }

func refusef(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...)}
}

// jobIDVar is the variable every URL template may use; it is always
// defined once an operation has a job id.
const jobIDVar = "job_id"

// StatusURL fills the contract's status URL with a job id, escaped per
// RFC 6570 so that it can never change the URL's structure, and checks
// that the result stays on an allowed origin.
func StatusURL(c *pollwarden.ContractSpec, jobID string) (string, error) {
	return StatusURLFor(c, jobID, nil)
}

// StatusURLFor is StatusURL with the operation's variables (as returned by
// OperationVars and kept on the record).
func StatusURLFor(c *pollwarden.ContractSpec, jobID string, vars map[string]string) (string, error) {
	if c == nil {
		return "", errors.New("contract: StatusURL: nil contract")
	}
	if jobID == "" {
		return "", refusef("empty job id")
	}
	return ExpandURL(c, c.Status.URL, withJob(jobID, vars))
}

// CancelURL fills the contract's cancel URL like StatusURL; an operation
// created from a status_url has no job id, and a cancel URL that needs one
// is refused rather than sent with a hole in it.
func CancelURL(c *pollwarden.ContractSpec, jobID string) (string, error) {
	return CancelURLFor(c, jobID, nil)
}

// CancelURLFor is CancelURL with the operation's variables.
func CancelURLFor(c *pollwarden.ContractSpec, jobID string, vars map[string]string) (string, error) {
	if c == nil || c.Cancel == nil {
		return "", refusef("the contract documents no cancel action")
	}
	return ExpandURL(c, c.Cancel.URL, withJob(jobID, vars))
}

// ExpandURL expands a URL template of the contract (status, cancel, and
// later submit and result URLs) with vars and checks the result with
// CheckOrigin, so no variable value can move the credential elsewhere.
// Every variable the template uses must be given; a value that would add
// a "." or ".." path segment, or end the path early through {+…}, is
// refused.
func ExpandURL(c *pollwarden.ContractSpec, tmpl string, vars map[string]string) (string, error) {
	t, err := uritemplate.Parse(tmpl)
	if err != nil {
		return "", refusef("the contract's URL template is malformed: %v", err)
	}
	inPath := true
	last := 0
	for _, e := range t.Exprs() {
		if strings.ContainsAny(tmpl[last:e.Start], "?#") {
			inPath = false
		}
		last = e.End
		for _, v := range e.Vars {
			val, ok := vars[v.Name]
			if !ok {
				return "", refusef("the URL needs {%s} and none is given", v.Name)
			}
			if inPath {
				if msg := pathValueProblem(e.Op, val); msg != "" {
					return "", refusef("value %s for {%s} %s", clip(val), v.Name, msg)
				}
			}
		}
		if e.Op == '?' || e.Op == '&' || e.Op == '#' {
			inPath = false
		}
	}
	out := t.Expand(vars)
	if err := CheckOrigin(c, out); err != nil {
		return "", err
	}
	return out, nil
}

// pathValueProblem says why a value may not be expanded into the path.
// Only {+…} and {#…} keep "/", "?" and "#", so only they need more than
// the dot-segment check.
func pathValueProblem(op byte, val string) string {
	if val == "." || val == ".." {
		return "would change the URL's path"
	}
	if op != '+' {
		return ""
	}
	if strings.ContainsAny(val, "?#") {
		return "would end the URL's path (it holds ? or #)"
	}
	for _, seg := range strings.Split(val, "/") {
		if dotSegment(seg) {
			return "would change the URL's path (a . or .. segment)"
		}
	}
	return ""
}

// dotSegment reports whether seg, once percent-decoded as a server
// would, is or holds a "." or ".." segment: {+…} passes %2e, %2f and %5c
// through unchanged, and many servers and proxies decode them before
// resolving the path, so "%2e%2e", ".%2E" and "..%2f" climb out as ".."
// does. Backslashes count as separators, as some servers take them.
func dotSegment(seg string) bool {
	dec, err := url.PathUnescape(seg)
	if err != nil {
		dec = seg // a stray % is sent as %25, so nothing decodes it
	}
	for _, part := range strings.FieldsFunc(dec, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == "." || part == ".." {
			return true
		}
	}
	return dec == "." || dec == ".."
}
