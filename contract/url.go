package contract

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/pollwarden/pollwarden"
)

// refusal is an error about caller input; errors.Is(err,
// pollwarden.ErrInvalid) holds, so doors can answer "usage error".
type refusal struct{ msg string }

func (e *refusal) Error() string { return e.msg }
func (e *refusal) Unwrap() error { return pollwarden.ErrInvalid }

func refusef(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...)}
}

// StatusURL fills the contract's status URL with a job id. The id is
// escaped so that it can never change the URL's structure: path-escaped in
// the path, query-escaped in the query. A URL without {job_id} is returned
// unchanged.
func StatusURL(c *pollwarden.Contract, jobID string) (string, error) {
	if c == nil {
		return "", errors.New("contract: StatusURL: nil contract")
	}
	if jobID == "" {
		return "", refusef("empty job id")
	}
	if jobID == "." || jobID == ".." {
		return "", refusef("job id %q would change the status path", jobID)
	}
	tmpl := c.Status.URL
	query := strings.IndexByte(tmpl, '?')
	var b strings.Builder
	for {
		i := strings.Index(tmpl, jobIDPlaceholder)
		if i < 0 {
			b.WriteString(tmpl)
			break
		}
		b.WriteString(tmpl[:i])
		if pos := len(c.Status.URL) - len(tmpl) + i; query >= 0 && pos > query {
			b.WriteString(url.QueryEscape(jobID))
		} else {
			b.WriteString(url.PathEscape(jobID))
		}
		tmpl = tmpl[i+len(jobIDPlaceholder):]
	}
	out := b.String()
	if err := CheckHost(c, out); err != nil {
		return "", err
	}
	return out, nil
}

// CheckHost refuses a URL that the status credential must not be sent to:
// not absolute http(s), carrying user credentials, or on a host outside
// the contract's allowed_hosts. It guards --status-url, Location headers
// and redirects. A contract without allowed_hosts allows its URL's host.
func CheckHost(c *pollwarden.Contract, rawURL string) error {
	if c == nil {
		return errors.New("contract: CheckHost: nil contract")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return refusef("not a valid URL: %v", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return refusef("not an absolute http or https URL")
	case u.User != nil:
		return refusef("URL carries user credentials")
	case u.Hostname() == "":
		return refusef("URL names no host")
	}
	allowed := c.Status.AllowedHosts
	if len(allowed) == 0 {
		if host, msg := checkURL(c.Status.URL); msg == "" {
			allowed = []string{host}
		}
	}
	if !hostAllowed(allowed, u.Hostname()) {
		return refusef("host %q is not allowed by contract %s (allowed: %s)",
			u.Hostname(), c.Name, strings.Join(allowed, ", "))
	}
	return nil
}
