package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// decideOnce reserves the first request at t0 and decides obs at now.
func decideOnce(t *testing.T, c *pollwarden.ContractSpec, obs *pollwarden.Observation, now time.Time) Step {
	t.Helper()
	op := reservedAt(t, c, newOp(t, c), t0)
	return Decide(op, c, obs, now, fixedRand(0))
}

func withURL(u any) func(*pollwarden.BodyFacts) {
	return func(b *pollwarden.BodyFacts) { b.Fields = map[string]any{"result.url": u} }
}

func TestDecideOutcomes(t *testing.T) {
	at := t0.Add(time.Second)
	for name, tc := range map[string]struct {
		obs        *pollwarden.Observation
		now        time.Time
		contract   func(*pollwarden.ContractSpec)
		wantPhase  pollwarden.Phase
		wantReason pollwarden.Reason
	}{
		"R1 200 with a pending state only schedules": {obs: obs200("running", nil), wantPhase: pollwarden.PhaseWaiting},
		"R2 success with a valid result succeeds":    {obs: obs200("succeeded", withURL("https://r.example.com/a.csv")), wantPhase: pollwarden.PhaseSucceeded},
		"R2 failure keeps the provider error":        {obs: obs200("failed", nil), wantPhase: pollwarden.PhaseFailed},
		"R2 cancelled stops":                         {obs: obs200("cancelled", nil), wantPhase: pollwarden.PhaseCancelled},
		"R2 expired stops":                           {obs: obs200("expired", nil), wantPhase: pollwarden.PhaseExpired},
		"R2 paused is unknown_state":                 {obs: obs200("paused", nil), wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonUnknownState},
		"R2 awaiting_review is unknown_state":        {obs: obs200("awaiting_review", nil), wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonUnknownState},
		"R2 needs_payment is unknown_state":          {obs: obs200("needs_payment", nil), wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonUnknownState},
		"R2 state is case-sensitive":                 {obs: obs200("Running", nil), wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonUnknownState},
		"R2 unlisted: pending only when the contract says so": {
			obs: obs200("paused", nil), contract: func(c *pollwarden.ContractSpec) { c.State.UnlistedPending = true }, wantPhase: pollwarden.PhaseWaiting},
		"R3 success without the result field":     {obs: obs200("succeeded", nil), wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonIntegrationFailure},
		"R3 success with a relative result URL":   {obs: obs200("succeeded", withURL("/r/a.csv")), wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonIntegrationFailure},
		"R3 success with a non-string result URL": {obs: obs200("succeeded", withURL(42.0)), wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonIntegrationFailure},
		"R3 pending after the job's own expiry": {
			obs: obs200("running", func(b *pollwarden.BodyFacts) { b.JobExpiresAt = "2025-04-18T10:20:00Z" }), now: t0.Add(time.Minute),
			wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonIntegrationFailure},
		"R3 pending before the job's own expiry": {
			obs: obs200("running", func(b *pollwarden.BodyFacts) { b.JobExpiresAt = "2025-04-18T12:00:00Z" }), wantPhase: pollwarden.PhaseWaiting},
		"body that is not JSON": {obs: &pollwarden.Observation{Status: 200, Body: pollwarden.BodyFacts{Problem: "body is not JSON"}},
			wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonIntegrationFailure},
		"R13 401 stops at once":                 {obs: obsCode(401, ""), wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonAuthorizationDenied},
		"R13 403 stops at once":                 {obs: obsCode(403, "60"), wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonAuthorizationDenied},
		"R14 404 inside pending_for is pending": {obs: obsCode(404, ""), now: t0.Add(29 * time.Second), wantPhase: pollwarden.PhaseWaiting},
		"R14 404 after pending_for is integration_failure": {obs: obsCode(404, ""), now: t0.Add(30 * time.Second),
			wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonIntegrationFailure},
		"R12 5xx counts as a transport failure":     {obs: obsCode(502, ""), wantPhase: pollwarden.PhaseWaiting},
		"R12 timeout counts as a transport failure": {obs: &pollwarden.Observation{Transport: pollwarden.TransportTimeout}, wantPhase: pollwarden.PhaseWaiting},
		"redirect off allowed_hosts is integration_failure": {obs: &pollwarden.Observation{Status: 302, Transport: pollwarden.TransportRedirect,
			TransportDetail: "redirect to host evil.example refused"}, wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonIntegrationFailure},
		"unexplained 400 is integration_failure": {obs: obsCode(400, ""), wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonIntegrationFailure},
		"unfollowed 302 is integration_failure":  {obs: obsCode(302, ""), wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonIntegrationFailure},
		"R7 Retry-After past the deadline stops at once": {obs: obsCode(503, "7200"),
			wantPhase: pollwarden.PhaseEscalated, wantReason: pollwarden.ReasonDeadlineExceeded},
	} {
		t.Run(name, func(t *testing.T) {
			c := testContract()
			if tc.contract != nil {
				tc.contract(c)
			}
			now := tc.now
			if now.IsZero() {
				now = at
			}
			st := decideOnce(t, c, tc.obs, now)
			if st.Op.Phase != tc.wantPhase || st.Op.Reason != tc.wantReason {
				t.Fatalf("phase %s reason %q, want %s %q", st.Op.Phase, st.Op.Reason, tc.wantPhase, tc.wantReason)
			}
			if st.Op.Phase != pollwarden.PhaseSucceeded && st.Op.Result != nil {
				t.Fatalf("R1: result %s set without success", st.Op.Result)
			}
			if len(st.Events) == 0 || st.Events[0].Kind != pollwarden.EventResponseReceived {
				t.Fatalf("R24: first event %v, want response_received", st.Events)
			}
			if st.Op.Phase == pollwarden.PhaseWaiting && !st.Op.NextPollAt.After(now) {
				t.Fatalf("waiting with next poll %s not after now %s", st.Op.NextPollAt, now)
			}
		})
	}
}

func TestR1_PendingGrantsNothingButALaterObservation(t *testing.T) {
	c := testContract()
	// A pending body that even carries a result URL does not succeed.
	st := decideOnce(t, c, obs200("running", withURL("https://r.example.com/a.csv")), t0)
	if st.Op.Phase != pollwarden.PhaseWaiting || st.Op.Result != nil || st.Op.MaxStatusRequests != 12 || !st.Op.DeadlineAt.Equal(t0.Add(40*time.Minute)) {
		t.Fatalf("pending answer changed more than the schedule: %+v", st.Op)
	}
}

func TestR2_FailureKeepsProviderError(t *testing.T) {
	c := testContract()
	st := decideOnce(t, c, obs200("failed", func(b *pollwarden.BodyFacts) { b.Error = []byte(`{"code":"E42"}`) }), t0)
	if string(st.Op.ProviderError) != `{"code":"E42"}` {
		t.Fatalf("provider error %s, want the body's error", st.Op.ProviderError)
	}
}

func TestR2_SuccessKeepsResult(t *testing.T) {
	st := decideOnce(t, testContract(), obs200("succeeded", withURL("https://r.example.com/a.csv")), t0)
	if !strings.Contains(string(st.Op.Result), "https://r.example.com/a.csv") || st.Op.FinishedAt == nil {
		t.Fatalf("result %s finished %v", st.Op.Result, st.Op.FinishedAt)
	}
}

func TestR6_Hints(t *testing.T) {
	now := t0.Add(time.Second)
	for name, tc := range map[string]struct {
		set        func(*pollwarden.BodyFacts)
		wantSource pollwarden.DelaySource
		wantNext   time.Time // zero: from local backoff, not checked exactly
		wantReject bool
	}{
		"valid poll_after_seconds sets the next poll": {set: func(b *pollwarden.BodyFacts) { b.PollAfter = 90.0 },
			wantSource: pollwarden.DelayPollHint, wantNext: now.Add(90 * time.Second)},
		"valid next_check_at sets the next poll": {set: func(b *pollwarden.BodyFacts) { b.NextCheckAt = "2025-04-18T10:25:00Z" },
			wantSource: pollwarden.DelayPollHint, wantNext: time.Date(2025, 4, 18, 10, 25, 0, 0, time.UTC)},
		"both hints: the later one": {set: func(b *pollwarden.BodyFacts) { b.PollAfter = 30.0; b.NextCheckAt = "2025-04-18T10:25:00Z" },
			wantSource: pollwarden.DelayPollHint, wantNext: time.Date(2025, 4, 18, 10, 25, 0, 0, time.UTC)},
		"hint of zero is raised to backoff.base": {set: func(b *pollwarden.BodyFacts) { b.PollAfter = 0.0 },
			wantSource: pollwarden.DelayPollHint, wantNext: now.Add(5 * time.Second)},
		"negative poll_after_seconds is rejected": {set: func(b *pollwarden.BodyFacts) { b.PollAfter = -5.0 },
			wantSource: pollwarden.DelayLocalBackoff, wantReject: true},
		"string poll_after_seconds is rejected": {set: func(b *pollwarden.BodyFacts) { b.PollAfter = "30" },
			wantSource: pollwarden.DelayLocalBackoff, wantReject: true},
		"unparseable next_check_at is rejected": {set: func(b *pollwarden.BodyFacts) { b.NextCheckAt = "tomorrow" },
			wantSource: pollwarden.DelayLocalBackoff, wantReject: true},
		"numeric next_check_at is rejected": {set: func(b *pollwarden.BodyFacts) { b.NextCheckAt = 1.7e9 },
			wantSource: pollwarden.DelayLocalBackoff, wantReject: true},
		"hint past the deadline is rejected": {set: func(b *pollwarden.BodyFacts) { b.PollAfter = 3600.0 },
			wantSource: pollwarden.DelayLocalBackoff, wantReject: true},
		"next_check_at past the deadline is rejected": {set: func(b *pollwarden.BodyFacts) { b.NextCheckAt = "2025-04-18T12:00:00Z" },
			wantSource: pollwarden.DelayLocalBackoff, wantReject: true},
	} {
		t.Run(name, func(t *testing.T) {
			st := decideOnce(t, testContract(), obs200("running", tc.set), now)
			op := st.Op
			if op.Phase != pollwarden.PhaseWaiting || op.NextPollSource != tc.wantSource {
				t.Fatalf("phase %s source %s, want waiting from %s", op.Phase, op.NextPollSource, tc.wantSource)
			}
			if !tc.wantNext.IsZero() && !op.NextPollAt.Equal(tc.wantNext) {
				t.Fatalf("next poll %s, want %s", op.NextPollAt, tc.wantNext)
			}
			if got := hasEvent(st.Events, pollwarden.EventHintRejected); got != tc.wantReject {
				t.Fatalf("hint_rejected recorded = %v, want %v", got, tc.wantReject)
			}
			if !op.NextPollAt.Before(op.DeadlineAt) {
				t.Fatal("next poll not bounded by the deadline")
			}
		})
	}
}

func TestR7_RetryAfterIsAMinimum(t *testing.T) {
	now := t0.Add(31 * time.Second)
	for name, ra := range map[string]string{
		"delta-seconds": "120",
		"HTTP-date":     now.Add(120 * time.Second).UTC().Format(httpDate),
	} {
		for _, code := range []int{503, 429} {
			t.Run(name, func(t *testing.T) {
				st := decideOnce(t, testContract(), obsCode(code, ra), now)
				op := st.Op
				if op.NextPollAt.Before(now.Add(120*time.Second)) || op.NextPollSource != pollwarden.DelayRetryAfter {
					t.Fatalf("%d Retry-After %s: next poll %s from %s, want ≥ %s from provider_retry_after",
						code, ra, op.NextPollAt, op.NextPollSource, now.Add(120*time.Second))
				}
			})
		}
	}
}

const httpDate = "Mon, 02 Jan 2006 15:04:05 GMT"

func TestR7_RetryAfterBelowBackoffKeepsBackoff(t *testing.T) {
	c := testContract()
	st := decideOnce(t, c, obsCode(503, "1"), t0)
	if st.Op.NextPollSource != pollwarden.DelayLocalBackoff || st.Op.NextPollAt.Before(t0.Add(5*time.Second)) {
		t.Fatalf("next %s from %s: a short Retry-After must not shorten the backoff", st.Op.NextPollAt, st.Op.NextPollSource)
	}
}

func TestR7_BadRetryAfterIsRejectedAndRecorded(t *testing.T) {
	for _, ra := range []string{"-5", "soon", "1.5"} {
		st := decideOnce(t, testContract(), obsCode(503, ra), t0)
		if !hasEvent(st.Events, pollwarden.EventHintRejected) || st.Op.NextPollSource != pollwarden.DelayLocalBackoff {
			t.Fatalf("Retry-After %q: source %s, rejected recorded %v", ra, st.Op.NextPollSource, hasEvent(st.Events, pollwarden.EventHintRejected))
		}
	}
}

func TestR8_429WithoutRetryAfter(t *testing.T) {
	c := testContract()
	op := reservedAt(t, c, newOp(t, c), t0)
	st := Decide(op, c, obsCode(429, ""), t0, fixedRand(0))
	raw := RawDelay(c.Backoff, st.Op.CompletedPolls)
	if d := st.Op.NextPollAt.Sub(t0); d < min(4*raw, c.Backoff.Max) {
		t.Fatalf("delay after bare 429 = %s, want ≥ 4×raw %s", d, raw)
	}
	if st.Op.RateLimitedUsed != 1 {
		t.Fatalf("rate-limited count %d, want 1", st.Op.RateLimitedUsed)
	}
}

func TestR8_RateLimitBudgetIsExact(t *testing.T) {
	c := testContract()
	c.Limits.MaxRateLimited = 2
	op := newOp(t, c)
	now := t0
	for i := 1; i <= 2; i++ {
		op = Decide(reservedAt(t, c, op, now), c, obsCode(429, ""), now, fixedRand(0)).Op
		now = op.NextPollAt
		if i == 1 && op.Phase != pollwarden.PhaseWaiting {
			t.Fatalf("after the first 429: %s, want waiting", op.Phase)
		}
	}
	if op.Phase != pollwarden.PhaseEscalated || op.Reason != pollwarden.ReasonRateLimited {
		t.Fatalf("after the second 429 of 2: %s %s, want escalated rate_limited", op.Phase, op.Reason)
	}
}

func TestR12_TransportFailuresKeepFactsAndBudgetIsExact(t *testing.T) {
	c := testContract()
	c.Limits.MaxTransportFailures = 2
	op := newOp(t, c)
	now := t0
	failures := []*pollwarden.Observation{
		{Status: 503, RequestID: "req-1", ReceivedAt: t0.Add(time.Second)},
		{Transport: pollwarden.TransportTimeout, TransportDetail: "no answer in 10s"},
	}
	var st Step
	for i, o := range failures {
		st = Decide(reservedAt(t, c, op, now), c, o, now, fixedRand(0))
		op = st.Op
		if i == 0 {
			if op.LastHTTP != 503 || op.LastRequestID != "req-1" || op.LastHTTPAt == nil || !op.LastHTTPAt.Equal(t0.Add(time.Second)) {
				t.Fatalf("R12: 503 facts not kept: status %d id %q at %v", op.LastHTTP, op.LastRequestID, op.LastHTTPAt)
			}
			if op.Phase != pollwarden.PhaseWaiting {
				t.Fatalf("first failure of 2 stopped: %s", op.Phase)
			}
			now = op.NextPollAt
		}
	}
	if op.Phase != pollwarden.PhaseEscalated || op.Reason != pollwarden.ReasonProviderFailure || op.TransportFailuresUsed != 2 {
		t.Fatalf("after 2 of 2 failures: %s %s used %d", op.Phase, op.Reason, op.TransportFailuresUsed)
	}
	if op.StatusRequestsUsed != 2 {
		t.Fatalf("R12: the timed-out request counts as sent: used %d, want 2", op.StatusRequestsUsed)
	}
}

func TestR18_DeadlineStopsDespiteApparentProgress(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	near := t0.Add(40*time.Minute - 3*time.Second)
	op.NextPollAt = near
	st := Decide(reservedAt(t, c, op, near), c, obs200("running", nil), near, fixedRand(0))
	// The state changed (none → running) but the next request cannot fit.
	if st.Op.Phase != pollwarden.PhaseEscalated || st.Op.Reason != pollwarden.ReasonDeadlineExceeded {
		t.Fatalf("%s %s, want escalated deadline_exceeded", st.Op.Phase, st.Op.Reason)
	}
	if st.Op.LastState != "running" || !st.Op.DeadlineAt.Equal(t0.Add(40*time.Minute)) {
		t.Fatalf("last state %q deadline %s: want running and the original deadline", st.Op.LastState, st.Op.DeadlineAt)
	}
}

func TestR24_ResponseEventCarriesTheDecisionRecord(t *testing.T) {
	st := decideOnce(t, testContract(), obsCode(503, "120"), t0.Add(31*time.Second))
	d := st.Events[0].Data
	if d.HTTPStatus != 503 || d.RetryAfter != "120" || d.NextPollAt == nil || d.DelaySource != pollwarden.DelayRetryAfter ||
		d.RequestsUsed != 1 || d.MaxRequests != 12 || d.DeadlineAt == nil || d.Decision == "" {
		t.Fatalf("response event lacks facts: %+v", d)
	}
}
