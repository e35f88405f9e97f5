// Package fakeprovider is a scriptable provider status API on real loopback
// HTTP, for tests and for `pollwarden demo`. Each job answers a script of
// steps in order, the last one repeating, and the server records every
// request so tests can assert what a provider would have seen: how many
// status requests, when, with which credential, and whether two were ever
// in flight at once.
package fakeprovider

import (
	"encoding/json"
	"maps"
	"time"
)

// Step is one scripted answer.
type Step struct {
	// Status defaults to 200.
	Status int
	Header map[string]string
	// Body is sent raw; when empty, JSON (if non-nil) is marshalled.
	Body  string
	JSON  any
	Delay time.Duration

	// withJobID makes the server add "job_id" to a map JSON body, so the
	// helpers need not be told the id they are scripted under.
	withJobID bool
}

// State answers {"job_id": id, "state": state, ...extra}.
func State(state string, extra map[string]any) Step {
	body := map[string]any{"state": state}
	maps.Copy(body, extra)
	return Step{JSON: body, withJobID: true}
}

// Succeeded answers {"job_id": id, "state": "succeeded", "result": {"url": url}}.
func Succeeded(url string) Step {
	return State("succeeded", map[string]any{"result": map[string]any{"url": url}})
}

// Failed answers {"job_id": id, "state": "failed", "error": {"message": msg}}.
func Failed(msg string) Step {
	return State("failed", map[string]any{"error": map[string]any{"message": msg}})
}

// Code answers a bare status code with headers and no body, e.g.
// Code(429, map[string]string{"Retry-After": "120"}).
func Code(status int, header map[string]string) Step {
	return Step{Status: status, Header: header}
}

// body renders the step's body for jobID.
func (s Step) body(jobID string) (b []byte, isJSON bool, err error) {
	if s.Body != "" {
		return []byte(s.Body), false, nil
	}
	if s.JSON == nil {
		return nil, false, nil
	}
	v := s.JSON
	if m, ok := v.(map[string]any); ok && s.withJobID {
		if _, has := m["job_id"]; !has {
			m = maps.Clone(m)
			m["job_id"] = jobID
			v = m
		}
	}
	b, err = json.Marshal(v)
	return b, true, err
}
