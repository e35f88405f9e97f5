package contract

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

func mustLoad(t testing.TB, c *pollwarden.ContractSpec) *Loaded {
	t.Helper()
	x, err := Compile(c)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return x
}

func TestExtract(t *testing.T) {
	spec := specContract()
	combined := specContract()
	combined.State.Path = "status == 'completed' && conclusion || status"
	nested := specContract()
	nested.State.Path = "data.job.state"

	tests := []struct {
		name string
		c    *pollwarden.ContractSpec
		body string
		want pollwarden.BodyFacts
	}{
		{"pending with hints", spec, `{"state":"running","poll_after_seconds":30,"next_check_at":"2026-01-01T10:00:00Z","expires_at":"2026-01-02T00:00:00Z"}`,
			pollwarden.BodyFacts{State: "running", HasState: true, PollAfter: 30.0, NextCheckAt: "2026-01-01T10:00:00Z", JobExpiresAt: "2026-01-02T00:00:00Z"}},
		{"success with result", spec, `{"state":"succeeded","result":{"url":"https://dl.example.com/r.csv","size":3}}`,
			pollwarden.BodyFacts{State: "succeeded", HasState: true, Fields: map[string]any{"result.url": "https://dl.example.com/r.csv"}}},
		{"failure keeps error", spec, `{"state":"failed","error":{"code":"E42","message":"quota"}}`,
			pollwarden.BodyFacts{State: "failed", HasState: true, Error: json.RawMessage(`{"code":"E42","message":"quota"}`)}},
		{"null error is absent", spec, `{"state":"failed","error":null}`,
			pollwarden.BodyFacts{State: "failed", HasState: true}},
		{"nested path", nested, `{"data":{"job":{"state":"queued"}}}`,
			pollwarden.BodyFacts{State: "queued", HasState: true}},
		{"combined completed", combined, `{"status":"completed","conclusion":"failure"}`,
			pollwarden.BodyFacts{State: "failure", HasState: true}},
		{"combined in progress", combined, `{"status":"in_progress","conclusion":null}`,
			pollwarden.BodyFacts{State: "in_progress", HasState: true}},
		{"not JSON", spec, `<html>502 Bad Gateway</html>`,
			pollwarden.BodyFacts{Problem: "body is not JSON: invalid character '<' looking for beginning of value"}},
		{"empty body", spec, ``,
			pollwarden.BodyFacts{Problem: "body is not JSON: unexpected end of JSON input"}},
		{"missing state", spec, `{"status":"running"}`,
			pollwarden.BodyFacts{Problem: `state path "state" gave nothing`}},
		{"null state", spec, `{"state":null}`,
			pollwarden.BodyFacts{Problem: `state path "state" gave nothing`}},
		{"numeric state", spec, `{"state":3}`,
			pollwarden.BodyFacts{Problem: `state path "state" gave a number, not a string`}},
		{"object state", spec, `{"state":{"name":"x"}}`,
			pollwarden.BodyFacts{Problem: `state path "state" gave an object, not a string`}},
		{"array body", spec, `["running"]`,
			pollwarden.BodyFacts{Problem: `state path "state" gave nothing`}},
		{"hints of wrong type kept raw", spec, `{"state":"running","poll_after_seconds":"soon","next_check_at":12,"expires_at":[1]}`,
			pollwarden.BodyFacts{State: "running", HasState: true, PollAfter: "soon", NextCheckAt: 12.0, JobExpiresAt: []any{1.0}}},
		{"negative hint kept raw", spec, `{"state":"running","poll_after_seconds":-5}`,
			pollwarden.BodyFacts{State: "running", HasState: true, PollAfter: -5.0}},
		{"result field of wrong type kept", spec, `{"state":"succeeded","result":{"url":7}}`,
			pollwarden.BodyFacts{State: "succeeded", HasState: true, Fields: map[string]any{"result.url": 7.0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mustLoad(t, tc.c).Extract([]byte(tc.body))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestExtractBodyTooLarge(t *testing.T) {
	c := specContract()
	c.Status.MaxBodyBytes = 10
	got := mustLoad(t, c).Extract([]byte(`{"state":"running"}`))
	if got.HasState || !strings.Contains(got.Problem, "max_body_bytes") {
		t.Errorf("got %#v", got)
	}
}

func TestExtractNoOptionalPaths(t *testing.T) {
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	x := mustLoad(t, c)
	if x.Spec() != c {
		t.Error("Contract() is not the compiled contract")
	}
	got := x.Extract([]byte(`{"status":"done","error":"x","poll_after_seconds":3}`))
	want := pollwarden.BodyFacts{State: "done", HasState: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func TestCompileRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(*pollwarden.ContractSpec)
		path string
	}{
		{"empty state path", func(c *pollwarden.ContractSpec) { c.State.Path = "" }, "state.path"},
		{"bad state path", func(c *pollwarden.ContractSpec) { c.State.Path = "a[" }, "state.path"},
		{"bad field", func(c *pollwarden.ContractSpec) { c.Result.Require[0].Path = "||" }, "result.require[0].path"},
		{"bad hint", func(c *pollwarden.ContractSpec) { c.Hints.NextCheckAt = "." }, "hints.next_check_at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := specContract()
			tc.edit(c)
			_, err := Compile(c)
			if err == nil || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("Compile = %v, want a problem at %s", err, tc.path)
			}
		})
	}
	if _, err := Compile(nil); err == nil {
		t.Error("Compile(nil) succeeded")
	}
}
