package audit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"pgregory.net/rapid"
)

// TestPayloadIsPreviousEncoding: the hand-written sortedPayload gives the
// bytes of the encoder it replaced (kept below as the reference), so no
// stored payload, digest or hash changes.
func TestPayloadIsPreviousEncoding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		str := rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"", "<a&b>", "\u2028", "\xff", "a\xc3(", "\ufffd", `\ufffd`, "é", "\x00\n\"\\"}))
		var d pollwarden.EventData
		drawEventData(t, str, reflect.ValueOf(&d).Elem())
		got, ok := sortedPayload(d)
		want, wok := referenceSortedPayload(d)
		if ok && wok && !bytes.Equal(got, want) {
			t.Fatalf("payload:\n got %s\nwant %s", got, want)
		}
		if !ok && wok {
			t.Fatalf("sortedPayload refused what the reference encodes: %s", want)
		}
	})
}

func stepEvent() pollwarden.EventData {
	at := time.Date(2026, 12, 2, 7, 30, 1, 123456789, time.UTC)
	next := at.Add(7 * time.Second)
	return pollwarden.EventData{State: "running", PrevState: "queued", ProviderState: "RUNNING", HTTPStatus: 200,
		RequestID: "req-9f8e7d", RequestsUsed: 3, MaxRequests: 100, DeadlineAt: &at, NextPollAt: &next,
		DelaySource: pollwarden.DelayLocalBackoff, Decision: "wait"}
}

func BenchmarkPayload(b *testing.B) {
	d := stepEvent()
	b.Run("reference", func(b *testing.B) {
		cpuLoop(b, func() {
			referenceSortedPayload(d)
		})
	})
	b.Run("sortedPayload", func(b *testing.B) {
		cpuLoop(b, func() {
			sortedPayload(d)
		})
	})
}

// referenceData and referenceSortedPayload are the encoder sortedPayload
// replaced, as it was, kept as the reference of its bytes.
//
// referenceData is EventData with its fields in the byte order of their JSON
// names, so that encoding it gives Payload's canonical bytes directly,
// without the generic decode and re-encode (which costs more than the rest
// of an append). Options and ProviderError are absent: events carrying
// them take the generic path. TestSortedPayload holds the two paths equal,
// and fails when EventData gains a field this copy lacks.
type referenceData struct {
	Actor         *pollwarden.Actor      `json:"actor,omitempty"` // {"name","role"}: sorted already
	Bytes         int64                  `json:"bytes,omitempty"`
	DeadlineAt    *time.Time             `json:"deadline_at,omitempty"`
	Decision      string                 `json:"decision,omitempty"`
	DelaySource   pollwarden.DelaySource `json:"delay_source,omitempty"`
	Detail        string                 `json:"detail,omitempty"`
	Elapsed       string                 `json:"elapsed,omitempty"`
	Hint          string                 `json:"hint,omitempty"`
	HTTPStatus    int                    `json:"http_status,omitempty"`
	Incident      string                 `json:"incident,omitempty"`
	MaxRequests   int                    `json:"max_status_requests,omitempty"`
	NextPollAt    *time.Time             `json:"next_poll_at,omitempty"`
	Option        string                 `json:"option,omitempty"`
	Pages         int                    `json:"pages,omitempty"`
	PrevState     string                 `json:"prev_state,omitempty"`
	ProviderJobID string                 `json:"provider_job_id,omitempty"`
	RequestID     string                 `json:"provider_request_id,omitempty"`
	ProviderState string                 `json:"provider_state,omitempty"`
	RateLimited   int                    `json:"rate_limited_used,omitempty"`
	Reason        pollwarden.Reason      `json:"reason,omitempty"`
	RetryAfter    string                 `json:"retry_after,omitempty"`
	SHA256        string                 `json:"sha256,omitempty"`
	State         string                 `json:"state,omitempty"`
	RequestsUsed  int                    `json:"status_requests_used,omitempty"`
	Transport     string                 `json:"transport_error,omitempty"`
	FailuresUsed  int                    `json:"transport_failures_used,omitempty"`
	URL           string                 `json:"url,omitempty"`
}

func referenceSortedPayload(d pollwarden.EventData) ([]byte, bool) {
	v := referenceData{Actor: d.Actor, DeadlineAt: d.DeadlineAt, Decision: d.Decision, DelaySource: d.DelaySource,
		Detail: d.Detail, Elapsed: d.Elapsed, Hint: d.Hint, HTTPStatus: d.HTTPStatus, MaxRequests: d.MaxRequests,
		NextPollAt: d.NextPollAt, Option: d.Option, PrevState: d.PrevState, ProviderJobID: d.ProviderJobID,
		RequestID: d.RequestID, ProviderState: d.ProviderState, RateLimited: d.RateLimited, Reason: d.Reason, RetryAfter: d.RetryAfter,
		State: d.State, RequestsUsed: d.RequestsUsed, Transport: d.Transport, FailuresUsed: d.FailuresUsed,
		Bytes: d.Bytes, SHA256: d.SHA256, URL: d.URL, Pages: d.Pages, Incident: d.Incident}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, false
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	// Invalid UTF-8 is encoded as the escape \ufffd here but as the raw
	// character by the generic path's second pass: leave such text to it.
	if bytes.Contains(out, []byte(`\ufffd`)) {
		return nil, false
	}
	return out, true
}

// cpuLoop runs f b.N times and reports the process's CPU time per run
// (cpu-ns/op) next to ns/op: on the shared machine wall time per run
// varies with the load, CPU time much less.
func cpuLoop(b *testing.B, f func()) {
	b.ReportAllocs()
	start := processCPU(b)
	n := 0
	for b.Loop() {
		f()
		n++
	}
	b.ReportMetric(float64(processCPU(b)-start)/float64(n), "cpu-ns/op")
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
