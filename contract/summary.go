package contract

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pollwarden/pollwarden"
)

// Summary describes a contract in a few lines for `pollwarden contract
// check`: what each state value means, what stops, and the limits. It
// names the credential's source, never a secret.
func Summary(c *pollwarden.ContractSpec) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	s := c.Status
	line("contract %s (version %d)", c.Name, c.Version)
	if c.BaseURL != "" {
		line("base url:   %s (path templates go under it)", c.BaseURL)
	}
	if len(c.Vars) > 0 {
		vs := []string{}
		for _, n := range templateVars(c.Vars)[1:] {
			v := c.Vars[n]
			d := ""
			if v.HasDefault {
				d = ", default " + v.Default
			}
			vs = append(vs, fmt.Sprintf("%s (pattern %s%s)", n, v.Pattern, d))
		}
		line("variables:  %s", strings.Join(vs, "; "))
	}
	origins := []string{}
	for _, o := range AllowedOrigins(c) {
		origins = append(origins, o.String())
	}
	line("status:     %s %s (timeout %s, body up to %d bytes, origins %s)",
		s.Method, s.URL, pollwarden.ShortDuration(s.Timeout), s.MaxBodyBytes, list(origins))
	if s.PropagateTrace {
		line("            trace: the W3C traceparent goes with each status and cancel request")
	}
	if s.Conditional == "etag" {
		line("            conditional: If-None-Match with the last ETag; a 304 is the job unchanged")
	}
	if s.UnsafeMethod {
		line("            unsafe method: every status call needs approval")
	}
	if cr := s.Credential; cr != nil && cr.ApproveEachCall {
		line("            credential %s: every status call waits for an approver's approval of that one call", cr.Ref)
	}
	if s.Safe {
		line("            %s declared a documented read (safe): no approval per call", s.Method)
	}
	if s.Body != "" {
		line("body:       %s", s.Body)
	}
	if ss := s.Session; ss != nil {
		notify := ""
		if ss.Notify != "" {
			notify = ", then " + ss.Notify
		}
		line("session:    %s %s with %s%s; every request carries its %s (a 404 to it opens a new session)",
			ss.Method, ss.URL, ss.Body, notify, ss.Header)
	}
	if cr := s.Credential; cr != nil {
		scheme := ""
		if cr.Scheme != "" {
			scheme = ", scheme " + cr.Scheme
		}
		switch cr.Kind {
		case pollwarden.CredentialSigV4:
			line("credential: AWS SigV4 (%s, %s), key %s, secret %s", cr.Region, cr.Service, cr.AccessKeyID, cr.Ref)
		case pollwarden.CredentialOAuth2:
			line("credential: OAuth2 client %s, secret %s, token from %s, in header %s%s", cr.ClientID, cr.Ref, cr.TokenURL, cr.Header, scheme)
		case pollwarden.CredentialGoogle:
			line("credential: Google service account key %s, token from %s, in header %s%s", cr.Ref, cr.TokenURL, cr.Header, scheme)
		default:
			line("credential: %s in header %s%s", cr.Ref, cr.Header, scheme)
		}
		if len(cr.Scopes) > 0 {
			line("            scopes %s", strings.Join(cr.Scopes, " "))
		}
	} else {
		line("credential: none")
	}
	if s.CAFile != "" {
		line("trusts:     only the CA certificates in %s", strings.TrimPrefix(s.CAFile, "file:"))
	}
	t := c.State
	if t.Header != "" {
		line("state:      the %s response header's value (the first, if sent more than once)", t.Header)
	} else {
		line("state path: %s", t.Path)
	}
	for _, cl := range []struct {
		name, then string
		vals       []string
	}{
		{"pending", "poll again", t.Pending},
		{"success", "succeed if the result is valid", t.Success},
		{"failure", "stop, keep the provider's error", t.Failure},
		{"cancelled", "stop", t.Cancelled},
		{"expired", "stop", t.Expired},
	} {
		line("  %-10s %s → %s", cl.name+":", list(cl.vals), cl.then)
	}
	if t.UnlistedPending {
		line("  %-10s any other value counts as pending", "unlisted:")
	} else {
		line("  %-10s any other value stops (unknown_state)", "unlisted:")
	}
	req := make([]string, 0, len(c.Result.Require))
	for _, f := range c.Result.Require {
		if f.Header != "" {
			req = append(req, fmt.Sprintf("header %s (%s)", f.Header, f.Kind))
			continue
		}
		req = append(req, fmt.Sprintf("%s (%s)", f.Path, f.Kind))
	}
	line("result:     requires %s; error at %s", list(req), orNone(c.Result.ErrorPath))
	expires := orNone(c.Hints.JobExpiresAt)
	if c.Hints.JobExpiresAfter != "" {
		expires += " + " + c.Hints.JobExpiresAfter
	}
	line("hints:      poll_after_seconds %s, next_check_at %s, job_expires_at %s",
		orNone(c.Hints.PollAfterSeconds), orNone(c.Hints.NextCheckAt), expires)
	line("404:        pending for %s after start, then integration_failure", pollwarden.ShortDuration(c.NotFoundPendingFor))
	line("backoff:    base %s, max %s (jittered 50–100%%)", pollwarden.ShortDuration(c.Backoff.Base), pollwarden.ShortDuration(c.Backoff.Max))
	l := c.Limits
	inARow := ""
	if l.ConsecutiveTransportFailures {
		inARow = " in a row"
	}
	line("limits:     deadline %s, %d status requests, %d transport failures%s, %d rate-limited answers",
		pollwarden.ShortDuration(l.Deadline), l.MaxStatusRequests, l.MaxTransportFailures, inARow, l.MaxRateLimited)
	if l.MaxRequestsPerSecond > 0 {
		line("ceiling:    %s status requests per second to this provider, per process",
			strconv.FormatFloat(l.MaxRequestsPerSecond, 'g', -1, 64))
	}
	if q := c.Quota; q != nil {
		from := ""
		if q.RemainingHeader != "" {
			from = "; the provider's count from " + q.RemainingHeader
		}
		if q.Requests > 0 {
			line("quota:      %d credentialed requests per %s, shared under key %s by every process and replica on the store%s",
				q.Requests, pollwarden.ShortDuration(q.Per), pollwarden.QuotaKey(c), from)
		} else {
			line("quota:      as the provider counts it (%s), shared under key %s by every process and replica on the store",
				q.RemainingHeader, pollwarden.QuotaKey(c))
		}
	}
	e := c.Escalation
	line("extension:  %s with %d more checks per approval", pollwarden.ShortDuration(e.ExtensionTime), e.ExtensionRequests)
	if e.ExtensionMaxTime > 0 || e.ExtensionMaxRequests > 0 {
		mt, mn := e.ExtensionBounds()
		line("            an agent's asked extension is offered up to %s with %d more checks", pollwarden.ShortDuration(mt), mn)
	}
	if e.ConsoleURL != "" {
		line("console:    %s", e.ConsoleURL)
	}
	if c.Cancel != nil {
		once := "sent once"
		if c.Cancel.Idempotent {
			once = "idempotent: may be sent again"
		}
		line("cancel:     %s %s (approver only; %s)", c.Cancel.Method, c.Cancel.URL, once)
	} else {
		line("cancel:     not documented; never offered")
	}
	if sb := c.Submit; sb != nil {
		line("submit:     %s %s; %s", sb.Method, sb.URL, submitSummary(sb))
	}
	if f := c.ResultFetch; f != nil {
		line("fetch:      %s %s; %s", f.Method, f.URL, fetchSummary(f))
	}
	return b.String()
}

// fetchSummary says how a result is fetched and bounded.
func fetchSummary(f *pollwarden.ResultFetch) string {
	parts := []string{fmt.Sprintf("at most %d bytes", f.MaxBytes)}
	if f.Safe {
		parts = append(parts, "a documented read")
	}
	if f.Body != "" {
		parts = append(parts, "body "+f.Body)
	}
	if f.ErrorPath != "" {
		parts = append(parts, "fails on "+f.ErrorPath)
	}
	if f.Paged() {
		parts = append(parts, fmt.Sprintf("pages by %s, at most %d, as JSON Lines", f.Next, f.MaxPages))
	}
	return strings.Join(parts, ", ")
}

// submitSummary says where a submission's job and status come from and
// whether it may ever be sent twice.
func submitSummary(s *pollwarden.SubmitSpec) string {
	var parts []string
	if s.JobIDPath != "" {
		parts = append(parts, "job id at "+s.JobIDPath)
	}
	if s.StatusLocation != "" {
		parts = append(parts, "status from "+s.StatusLocation)
	} else {
		parts = append(parts, "status at status.url")
	}
	if s.IdempotencyKeyHeader != "" {
		parts = append(parts, fmt.Sprintf("%s sent with a stored key, up to %d times", s.IdempotencyKeyHeader, s.MaxAttempts))
	} else {
		parts = append(parts, "no idempotency key: never sent twice")
	}
	return strings.Join(parts, ", ")
}

func list(vals []string) string {
	if len(vals) == 0 {
		return "(none)"
	}
	return strings.Join(vals, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
