package contract

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// specContract is the SPEC example as parsed.
func specContract() *pollwarden.ContractSpec {
	return &pollwarden.ContractSpec{
		Version: 1,
		Name:    "report-export",
		Status: pollwarden.StatusCall{
			URL:          "https://api.example.com/v1/jobs/{job_id}",
			Method:       "GET",
			Headers:      map[string]string{"Accept": "application/json"},
			Credential:   &pollwarden.Credential{Header: "Authorization", Scheme: "Bearer", Ref: "env:EXPORT_API_TOKEN"},
			Timeout:      10 * time.Second,
			MaxBodyBytes: 1048576,
			AllowedHosts: []string{"api.example.com"},
		},
		State: pollwarden.StateTable{
			Path:      "state",
			Pending:   []string{"queued", "running", "processing"},
			Success:   []string{"succeeded"},
			Failure:   []string{"failed"},
			Cancelled: []string{"cancelled"},
			Expired:   []string{"expired"},
		},
		Result: pollwarden.ResultSpec{
			Require:   []pollwarden.Field{{Path: "result.url", Kind: pollwarden.KindURL}},
			ErrorPath: "error",
		},
		Hints: pollwarden.HintPaths{
			PollAfterSeconds: "poll_after_seconds",
			NextCheckAt:      "next_check_at",
			JobExpiresAt:     "expires_at",
		},
		NotFoundPendingFor: 30 * time.Second,
		Backoff:            pollwarden.Backoff{Base: 5 * time.Second, Max: 120 * time.Second},
		Limits: pollwarden.Limits{
			Deadline: 40 * time.Minute, MaxStatusRequests: 12,
			MaxTransportFailures: 3, MaxRateLimited: 3,
		},
		Escalation: pollwarden.EscalationSpec{
			ExtensionTime: 15 * time.Minute, ExtensionRequests: 4,
			ConsoleURL: "https://console.example.com/jobs/{job_id}",
		},
		Cancel: &pollwarden.Action{URL: "https://api.example.com/v1/jobs/{job_id}/cancel", Method: "POST"},
	}
}

func TestParseSpecExample(t *testing.T) {
	for _, file := range []string{"testdata/full.yaml", "testdata/full.json"} {
		t.Run(file, func(t *testing.T) {
			got, err := Load(file)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if want := specContract(); !reflect.DeepEqual(got, want) {
				t.Errorf("got\n%#v\nwant\n%#v", got, want)
			}
		})
	}
}

const minimal = `version: 1
name: tiny
status:
  url: https://API.Example.com:8443/jobs/{job_id}
state:
  path: status
  pending: [running]
  success: [done]
`

func TestParseDefaults(t *testing.T) {
	got, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	want := &pollwarden.ContractSpec{
		Version: 1,
		Name:    "tiny",
		Status: pollwarden.StatusCall{
			URL:          "https://API.Example.com:8443/jobs/{job_id}",
			Method:       "GET",
			Timeout:      10 * time.Second,
			MaxBodyBytes: 1 << 20,
			AllowedHosts: []string{"api.example.com"},
		},
		State:   pollwarden.StateTable{Path: "status", Pending: []string{"running"}, Success: []string{"done"}},
		Backoff: pollwarden.Backoff{Base: 5 * time.Second, Max: 120 * time.Second},
		Limits: pollwarden.Limits{
			Deadline: 40 * time.Minute, MaxStatusRequests: 12,
			MaxTransportFailures: 3, MaxRateLimited: 3,
		},
		Escalation: pollwarden.EscalationSpec{ExtensionTime: 15 * time.Minute, ExtensionRequests: 4},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%#v\nwant\n%#v", got, want)
	}
}

func TestParseOptions(t *testing.T) {
	src := minimal + `  unlisted: pending
result:
  require:
    - {path: id}
    - {path: ok, kind: bool}
not_found: {pending_for: 0s}
cancel: {url: "https://api.example.com:8443/jobs/{job_id}?cancel=1"}
`
	src = strings.Replace(src, "status:\n", "status:\n  method: post\n  unsafe_method: true\n  request_id_header: X-Trace\n", 1)
	got, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"method", got.Status.Method, "POST"},
		{"unsafe", got.Status.UnsafeMethod, true},
		{"request id header", got.Status.RequestIDHeader, "X-Trace"},
		{"unlisted pending", got.State.UnlistedPending, true},
		{"require", got.Result.Require, []pollwarden.Field{{Path: "id", Kind: pollwarden.KindPresent}, {Path: "ok", Kind: pollwarden.KindBool}}},
		{"cancel", *got.Cancel, pollwarden.Action{URL: "https://api.example.com:8443/jobs/{job_id}?cancel=1", Method: "POST"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestParseRequestRate(t *testing.T) {
	for _, tc := range []struct {
		limits string
		want   float64
	}{
		{"", 0}, // absent: no ceiling
		{"limits: {max_requests_per_second: 0}\n", 0}, // explicit: no ceiling
		{"limits: {max_requests_per_second: 50}\n", 50},
		{"limits: {max_requests_per_second: 2.5}\n", 2.5},
		{"limits: {max_requests_per_second: 0.1}\n", 0.1}, // one request every ten seconds
		{"limits: {max_requests_per_second: 1e3}\n", 1000},
	} {
		c, err := Parse([]byte(minimal + tc.limits))
		if err != nil {
			t.Errorf("%q: %v", tc.limits, err)
			continue
		}
		if got := c.Limits.MaxRequestsPerSecond; got != tc.want {
			t.Errorf("%q: MaxRequestsPerSecond = %v, want %v", tc.limits, got, tc.want)
		}
		if c.Limits.MaxStatusRequests != defaultMaxRequests {
			t.Errorf("%q: the other limits lost their defaults: %+v", tc.limits, c.Limits)
		}
	}
}

func TestLoadNamesFile(t *testing.T) {
	path := t.TempDir() + "/bad.yaml"
	if err := os.WriteFile(path, []byte("version: 1\nbogus_key: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil {
		t.Fatal("Load accepted a bad file")
	}
	if want := path + ": line 2: bogus_key: unknown key"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(line, path+": line ") {
			t.Errorf("line %q lacks the file prefix", line)
		}
	}
	if !errors.Is(err, pollwarden.ErrInvalid) {
		t.Error("errors.Is(err, ErrInvalid) = false")
	}
	if _, err := Load(t.TempDir() + "/absent.yaml"); err == nil || errors.Is(err, pollwarden.ErrInvalid) {
		t.Errorf("Load(absent) = %v, want a read error", err)
	}
}

func TestParseAnchorsAndFileRef(t *testing.T) {
	src := `version: 1
name: anchors
status:
  url: &u https://api.example.com/jobs/{job_id}
  credential: {header: X-Api-Key, secret: "file:/run/secrets/key"}
state:
  path: status
  pending: &p [running, queued]
  success: [done]
cancel: {url: *u, method: delete}
`
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.Credential.Ref != "file:/run/secrets/key" || c.Status.Credential.Scheme != "" {
		t.Errorf("credential = %+v", *c.Status.Credential)
	}
	if c.Cancel.URL != c.Status.URL || c.Cancel.Method != "DELETE" || c.Cancel.Idempotent {
		t.Errorf("cancel = %+v (idempotent only when the contract says so)", *c.Cancel)
	}
	idem, err := Parse([]byte(strings.Replace(src, "method: delete}", "method: delete, idempotent: true}", 1)))
	if err != nil || !idem.Cancel.Idempotent {
		t.Errorf("cancel.idempotent: true: %v %+v", err, idem)
	}
	_, err = Parse([]byte(strings.Replace(src, "success: [done]", "success: [done]\n  expired: *p", 1)))
	if err == nil || !strings.Contains(err.Error(), "line 10: state.expired[0]: \"running\" is already listed in state.pending") {
		t.Errorf("aliased duplicate: %v", err)
	}
}

// escalation.extension.max_time and .max_status_requests bound an agent's
// asked extension; unset, the bounds are DefaultAskFactor times the fixed
// amounts, and the contract's fingerprint is what it was before they
// existed.
func TestExtensionAskBounds(t *testing.T) {
	c, err := Parse([]byte(base + "escalation:\n  extension: {time: 15m, status_requests: 4, max_time: 2h, max_status_requests: 40}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if mt, mn := c.Escalation.ExtensionBounds(); mt != 2*time.Hour || mn != 40 {
		t.Fatalf("bounds %s %d, want 2h 40", mt, mn)
	}
	d, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if mt, mn := d.Escalation.ExtensionBounds(); mt != time.Hour || mn != 16 {
		t.Fatalf("default bounds %s %d, want 1h 16", mt, mn)
	}
	if b, _ := json.Marshal(d.Escalation); strings.Contains(string(b), "ExtensionMax") {
		t.Fatalf("unset bounds are encoded, changing every stored fingerprint: %s", b)
	}
}
