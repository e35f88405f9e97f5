package controller

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
)

// FuzzObserveAndDecide classifies arbitrary answers (status, Retry-After,
// body) the way a step does and checks the invariants that must hold for
// any provider behaviour: no panic, success only with a result, and a
// waiting record always has its next poll in (now, deadline).
func FuzzObserveAndDecide(f *testing.F) {
	for _, s := range []struct {
		code int
		ra   string
		body string
	}{
		{200, "", `{"state":"running"}`}, {200, "", `{"state":"succeeded","result":{"url":"https://x.example.com/a"}}`},
		{200, "", `{"state":"succeeded","result":{"url":"/relative"}}`}, {200, "", `{"state":42}`}, {200, "", `not json`},
		{503, "120", ``}, {429, "", ``}, {429, "Fri, 18 Apr 2025 10:22:31 GMT", ``}, {404, "", ``}, {401, "", ``},
		{200, "", `{"state":"running","poll_after_seconds":-1,"next_check_at":"soon"}`}, {0, "", ``},
	} {
		f.Add(s.code, s.ra, []byte(s.body))
	}
	c, err := contract.Parse([]byte(fuzzContract))
	if err != nil {
		f.Fatal(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		f.Fatal(err)
	}
	t0 := time.Date(2025, 4, 18, 10, 20, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, code int, ra string, body []byte) {
		op, _, err := policy.NewOperation(c, policy.NewParams{ID: "f", ProviderJobID: "j"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		op, _ = policy.CountRequest(op, c, t0)
		resp := prober.Response{Status: code, RetryAfter: ra, SentAt: t0, ReceivedAt: t0}.WithBody(body)
		if code <= 0 || code > 999 {
			resp.Status, resp.Transport = 0, pollwarden.TransportOther
		}
		now := t0.Add(time.Second)
		st := policy.Decide(op, c, observe(ex, resp), now, rand.New(rand.NewPCG(1, 1)))
		switch st.Op.Phase {
		case pollwarden.PhaseSucceeded:
			if len(st.Op.Result) == 0 || resp.Status < 200 || resp.Status > 299 {
				t.Fatalf("success without a result or on HTTP %d", resp.Status)
			}
		case pollwarden.PhaseWaiting:
			if !st.Op.NextPollAt.After(now) || !st.Op.NextPollAt.Before(st.Op.DeadlineAt) {
				t.Fatalf("next poll %s outside (now %s, deadline %s)", st.Op.NextPollAt, now, st.Op.DeadlineAt)
			}
		}
		if len(st.Events) == 0 {
			t.Fatal("a decision without an event")
		}
	})
}

const fuzzContract = `version: 1
name: fuzz
status: {url: "https://api.example.com/jobs/{job_id}"}
state: {path: state, pending: [queued, running], success: [succeeded], failure: [failed]}
result: {require: [{path: result.url, kind: url}], error_path: error}
hints: {poll_after_seconds: poll_after_seconds, next_check_at: next_check_at, job_expires_at: expires_at}
not_found: {pending_for: 30s}
`
