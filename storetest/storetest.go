// Package storetest is the conformance suite every pollwarden.Store driver
// must pass (SQLite and PostgreSQL both run it). It checks only what the Store
// interface documents, through the interface, so one suite holds all
// drivers to the same behaviour.
//
// Times are compared with time.Equal semantics (a driver may return another
// location) and raw JSON by value (a driver may re-encode it); everything
// else must round-trip exactly.
package storetest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// Run runs the suite. open must return a new, empty store for each call;
// Run closes every store it opens when the subtest that opened it ends.
func Run(t *testing.T, open func(t *testing.T) pollwarden.Store) {
	fresh := func(t *testing.T) pollwarden.Store {
		t.Helper()
		s := open(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, pollwarden.Store)
	}{
		{"CreateGetRoundTrip", testCreateGetRoundTrip},
		{"CreateNilPointers", testCreateNilPointers},
		{"CreateExists", testCreateExists},
		{"GetNotFound", testGetNotFound},
		{"ListOrderFilterLimit", testList},
		{"ListOwnerBeforeLimit", testListOwner},
		{"ListContractJob", testListJob},
		{"ListReasonTextBeforeLimit", testListReasonText},
		{"CountsByPhase", testCounts},
		{"ListHeldByIncident", testListHeldBy},
		{"SaveKeepsOwner", testSaveKeepsOwner},
		{"ListDueOldestFirst", testListDue},
		{"ListDueFollowsSaves", testListDueAfterSave},
		{"ListDueSkipsLeased", testListDueSkipsLeased},
		{"SaveRoundTrip", testSaveRoundTrip},
		{"SaveVersionConflict", testSaveConflict},
		{"SaveNotFound", testSaveNotFound},
		{"LeaseHeldExpired", testLeaseHeldExpired},
		{"LeaseUnknownOperation", testLeaseUnknown},
		{"ReleaseKeepsRecordVersion", testReleaseKeepsVersion},
		{"SaveWithCurrentLease", testSaveWithLease},
		{"SaveWithStaleEpoch", testSaveStaleEpoch},
		{"SaveWithExpiredLease", testSaveExpiredLease},
		{"SaveWithReleasedLease", testSaveReleasedLease},
		{"SaveWithoutLeaseWhileLeased", testSaveWithoutLease},
		{"ReleaseThenAcquire", testReleaseThenAcquire},
		{"ClaimTakesLeaseAndReserves", testClaimTakesLeaseAndReserves},
		{"ClaimRefusedWritesNothing", testClaimRefused},
		{"ClaimSeesLatestRecord", testClaimSeesLatestRecord},
		{"ClaimBadReservation", testClaimBadReservation},
		{"ClaimWithCallersCopy", testClaimWithHave},
		{"CreateClaimReserves", testCreateClaimReserves},
		{"CreateClaimRefusedCreatesOnly", testCreateClaimRefused},
		{"CreateClaimNothingOrAll", testCreateClaimNothingOrAll},
		{"CreateClaimKeepsContract", testCreateClaimKeepsContract},
		{"IndexedColumnsFollowRecord", testIndexedColumnsFollowRecord},
		{"SaveReleasesCurrentLeaseOnly", testSaveRelease},
		{"ConcurrentClaimsOneWins", testConcurrentClaims},
		{"ClaimManyEachAlone", testClaimManyEachAlone},
		{"ClaimManyFencing", testClaimManyFencing},
		{"EventsAppendedInOrder", testEventsInOrder},
		{"EventsPerOperation", testEventsPerOperation},
		{"EventsStoreWideChain", testEventsStoreWideChain},
		{"EventListUnknownOperation", testEventListUnknown},
		{"ConcurrentSaversOneWinsEachVersion", testConcurrentSavers},
		{"ConcurrentIncrementsNoneLost", testConcurrentIncrements},
		{"PruneFinishedKeepsChain", testPrune},
		{"ContractKeptWithCreate", testContractKept},
		{"KeyNone", testKeyNone},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, fresh(t)) })
	}
}

// t0 has nanoseconds and a non-UTC zone, to catch drivers that truncate or
// shift instants.
var t0 = time.Date(2030, 3, 4, 10, 20, 30, 123456789, time.FixedZone("T0", 2*3600+30*60))

func at(d time.Duration) time.Time { return t0.Add(d) }

func ptr[T any](v T) *T { return &v }

// newOp is a minimal waiting operation, with every optional pointer nil.
func newOp(id string) *pollwarden.Operation {
	return &pollwarden.Operation{
		ID: id, Contract: "report-export", ProviderJobID: "job-" + id,
		StatusURL:   "https://api.example.com/v1/jobs/job-" + id,
		Fingerprint: "fp-" + id, ExpectedTerminal: []string{"succeeded", "failed"},
		StartedAt: t0, DeadlineAt: at(40 * time.Minute), NextPollAt: t0,
		NextPollSource: pollwarden.DelayLocalBackoff, Phase: pollwarden.PhaseWaiting,
		MaxStatusRequests: 12, MaxTransportFailures: 3, MaxRateLimited: 3,
	}
}

// fullOp sets every field of Operation; checkAllSet fails the suite when a
// field is added to Operation but not here, so round-trips stay complete.
func fullOp(id string) *pollwarden.Operation {
	op := newOp(id)
	op.CredentialName = "env:EXPORT_API_TOKEN"
	op.RequestDigest = "sha256:0f3c9a"
	op.Owner = "build-agent"
	op.Priority = 2
	op.ResultFetchesSent = 2
	op.Escalations = 3
	op.LastDecision = &pollwarden.DecisionRecord{Escalation: "esc-2", Option: pollwarden.OptionExtend,
		By: pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}, At: at(20 * time.Minute), Outcome: "extended by 15m"}
	op.RefusedCredential = &pollwarden.RefusedCredential{Ref: "env:EXPORT_API_TOKEN", Key: "a2V5", MAC: "bWFj", At: at(10 * time.Minute)}
	op.ExtensionAsked = &pollwarden.ExtensionAsk{ExtraTime: 30 * time.Minute, ExtraStatusRequests: 5, By: "build-agent", At: at(11 * time.Minute)}
	op.BusinessDeadlineAt = ptr(at(time.Hour).In(time.UTC))
	op.ProviderExpiresAt = ptr(at(2 * time.Hour).In(time.FixedZone("P", -7*3600)))
	op.StatusRequestsUsed, op.TransportFailuresUsed, op.RateLimitedUsed = 5, 1, 2
	op.CompletedPolls, op.ApprovedCalls = 4, 1
	op.NextPollAt = at(90*time.Second + 7)
	op.NextPollSpread = true
	op.HeldBy = "inc-0123456789abcdef"
	op.JitterFactor = 0.6180339887498949 // any float64 must come back exactly
	op.Phase, op.Reason = pollwarden.PhaseEscalated, pollwarden.ReasonRequestBudgetExhausted
	op.LastState, op.LastHTTP, op.LastHTTPAt, op.LastRequestID = "running", 503, ptr(at(time.Minute+1)), "req-9"
	op.LastProviderState = "in_progress/null"
	op.LastETag = `W/"etag-1"`
	op.Vars = map[string]string{"owner": "octocat", "repo": "Hello-World"}
	op.Result = json.RawMessage(`{"url":"https://files.example.com/r.csv","rows":12.50}`)
	op.ProviderError = json.RawMessage(`{"code":"E42","message":"quota <soon>"}`)
	op.FinishedAt = ptr(at(30 * time.Minute))
	op.Escalation = &pollwarden.Escalation{
		ID: "esc-3", Reason: pollwarden.ReasonRequestBudgetExhausted, Message: "12 of 12 checks used", At: at(30 * time.Minute),
		Options: []pollwarden.Option{
			{ID: pollwarden.OptionExtend, Label: "extend by 15m with 4 more checks", ExtraTime: "15m",
				ExtraStatusRequests: 4, NewDeadline: ptr(at(55 * time.Minute)), NewMaxStatusRequests: 16, GrantsAuthority: true},
			{ID: pollwarden.OptionAbandon, Label: "abandon"},
		},
	}
	op.Cancel = &pollwarden.CancelRecord{State: pollwarden.CancelAnswered, RequestedAt: at(31 * time.Minute),
		RequestedBy: pollwarden.Actor{Name: "alice", Role: pollwarden.RoleApprover}, Attempts: 1, HTTPStatus: 202,
		AnsweredAt: ptr(at(31*time.Minute + 3)), Detail: "POST https://api.example.com/v1/jobs/job-1/cancel answered 202"}
	op.ContractDigest = map[string]string{"status": "0f3c9a7e11d2b4c5", "escalation.extension": "9d0e1f2a3b4c5d6e"}
	op.ContractLimits = &pollwarden.ContractLimits{Deadline: 40 * time.Minute, MaxStatusRequests: 12, MaxTransportFailures: 3, MaxRateLimited: 3}
	op.ContractFingerprint = "5be7c0d2a1f3e4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9"
	op.Submission = &pollwarden.Submission{State: pollwarden.SubmissionAccepted, BodySHA256: "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
		Body: json.RawMessage(`{"report":"q3"}`), IdempotencyKey: "7d444840-9dc0-41c5-a9a3-7b0e54c1f2a8", MaxAttempts: 3, Attempts: 2,
		SentAt: ptr(at(time.Second)), AnsweredAt: ptr(at(2 * time.Second)), HTTPStatus: 202, RequestID: "req-sub-1",
		Detail: "POST https://api.example.com/v1/jobs answered 202, job job-1"}
	op.Version = 0
	return op
}

func checkAllSet(t *testing.T, op *pollwarden.Operation) {
	t.Helper()
	v := reflect.ValueOf(op).Elem()
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; name != "Version" && v.Field(i).IsZero() {
			t.Errorf("storetest fixture: Operation.%s is not set in fullOp; add it so its round-trip is tested", name)
		}
	}
}

// normalized returns a deep copy of v (through JSON, as drivers store it)
// with every time in UTC and every raw JSON value re-encoded canonically.
func normalized[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("normalize: %v", err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("normalize: %v", err)
	}
	walk(t, reflect.ValueOf(&out).Elem())
	return out
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

func walk(t *testing.T, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walk(t, v.Elem())
		}
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(v.Interface().(time.Time).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walk(t, v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type() == rawType {
			if v.Len() > 0 {
				var x any
				dec := json.NewDecoder(bytes.NewReader(v.Bytes()))
				dec.UseNumber()
				if err := dec.Decode(&x); err != nil {
					t.Fatalf("normalize raw JSON %s: %v", v.Bytes(), err)
				}
				b, _ := json.Marshal(x)
				v.SetBytes(b)
			}
			return
		}
		for i := range v.Len() {
			walk(t, v.Index(i))
		}
	}
}

// same fails unless got and want are equal up to time zones and JSON form.
func same[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	g, w := normalized(t, got), normalized(t, want)
	if !reflect.DeepEqual(g, w) {
		gj, _ := json.MarshalIndent(g, "", "  ")
		wj, _ := json.MarshalIndent(w, "", "  ")
		t.Fatalf("%s differs:\n got %s\nwant %s", what, gj, wj)
	}
}
