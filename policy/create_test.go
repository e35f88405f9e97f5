package policy

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

func TestR10_RecordCarriesEveryLimitBeforeTheFirstRequest(t *testing.T) {
	c := testContract()
	op, evs, err := NewOperation(c, NewParams{ID: "op1", ProviderJobID: "exp_71c", Deadline: t0.Add(20 * time.Minute), MaxStatusRequests: 5}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !op.DeadlineAt.Equal(t0.Add(20*time.Minute)) || op.MaxStatusRequests != 5 || op.MaxTransportFailures != 3 || op.MaxRateLimited != 3 {
		t.Fatalf("limits %+v", op)
	}
	if op.BusinessDeadlineAt == nil || op.StatusRequestsUsed != 0 || op.Phase != pollwarden.PhaseWaiting {
		t.Fatalf("record %+v", op)
	}
	if len(evs) != 1 || evs[0].Kind != pollwarden.EventSubmitted {
		t.Fatalf("events %+v", evs)
	}
}

func TestR4_RecordKeepsJobAccountFingerprintAndTerminalStates(t *testing.T) {
	c := testContract()
	op := newOp(t, c)
	if op.ProviderJobID != "exp_71c" || op.CredentialName != "env:EXPORT_API_TOKEN" || op.Fingerprint == "" {
		t.Fatalf("record %+v", op)
	}
	if got := strings.Join(op.ExpectedTerminal, ","); got != "succeeded,failed,cancelled,expired" {
		t.Fatalf("expected terminal states %s", got)
	}
	other := Fingerprint(c, "exp_72d", "", op.CredentialName)
	if other == op.Fingerprint {
		t.Fatal("another job has the same fingerprint")
	}
	c2 := testContract()
	c2.Status.URL = "https://api.example.com/v2/jobs/{job_id}"
	if Fingerprint(c2, "exp_71c", "", op.CredentialName) == op.Fingerprint {
		t.Fatal("another status call has the same fingerprint")
	}
}

// TestR10_LimitsMayBeLoweredNotRaised: each refusal names its field, and
// only a limit above the contract's is marked as one an approver may
// raise: a door tells them apart by these fields, never by the words.
func TestR10_LimitsMayBeLoweredNotRaised(t *testing.T) {
	c := testContract()
	for name, tc := range map[string]struct {
		p     NewParams
		field string
		above bool
	}{
		"raise requests":       {NewParams{ProviderJobID: "j", MaxStatusRequests: 13}, "max_status_requests", true},
		"raise failures":       {NewParams{ProviderJobID: "j", MaxTransportFailures: 4}, "max_transport_failures", true},
		"later deadline":       {NewParams{ProviderJobID: "j", Deadline: t0.Add(41 * time.Minute)}, "deadline", true},
		"above every limit":    {NewParams{ProviderJobID: "j", MaxStatusRequests: pollwarden.MaxCount + 1}, "max_status_requests", false},
		"deadline past a year": {NewParams{ProviderJobID: "j", Deadline: t0.Add(pollwarden.MaxSpan + time.Hour)}, "deadline", false},
		"negative budget":      {NewParams{ProviderJobID: "j", MaxStatusRequests: -1}, "max_status_requests", false},
		"deadline in the past": {NewParams{ProviderJobID: "j", Deadline: t0.Add(-time.Second)}, "deadline", false},
		"no job":               {NewParams{}, "job_id", false},
		"job id not text":      {NewParams{ProviderJobID: "j\xff"}, "job_id", false},
	} {
		t.Run(name, func(t *testing.T) {
			tc.p.ID = "op"
			_, _, err := NewOperation(c, tc.p, t0)
			pe, ok := errors.AsType[*ParamsError](err)
			if !ok || !errors.Is(err, pollwarden.ErrInvalid) || len(pe.Problems) != 1 {
				t.Fatalf("err %v, want one ParamsError problem", err)
			}
			if got := pe.Problems[0]; got.Field != tc.field || got.AboveContract != tc.above || got.Message == "" {
				t.Errorf("problem %+v, want field %s, above the contract's %v", got, tc.field, tc.above)
			}
			tc.p.MayRaise = true
			_, _, err = NewOperation(c, tc.p, t0)
			if tc.above && err != nil {
				t.Errorf("an approver's same request: %v, want accepted", err)
			}
			if !tc.above && err == nil {
				t.Error("an approver's same request was accepted: the problem is not the contract's limit")
			}
		})
	}
	op, _, err := NewOperation(c, NewParams{ID: "op", ProviderJobID: "j", MaxStatusRequests: 20, MayRaise: true}, t0)
	if err != nil || op.MaxStatusRequests != 20 {
		t.Fatalf("an approver may raise: %v", err)
	}
}

func TestNewOperationKeepsRequestDigest(t *testing.T) {
	c := testContract()
	op, _, err := NewOperation(c, NewParams{ID: "op", ProviderJobID: "j", RequestDigest: "d1"}, t0)
	if err != nil || op.RequestDigest != "d1" {
		t.Fatalf("digest %q, err %v", op.RequestDigest, err)
	}
}

// TestNewOperationDigestOnceOrComputed: a record carries the contract's
// digest whether the caller computed it once beforehand or not, as its own
// copy (a caller's map shared by many records is never aliased).
func TestNewOperationDigestOnceOrComputed(t *testing.T) {
	c := testContract()
	own, _, err := NewOperation(c, NewParams{ID: "op1", ProviderJobID: "j"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := ContractDigest(c)
	if len(own.ContractDigest) == 0 || !maps.Equal(own.ContractDigest, want) {
		t.Fatalf("computed digest %v, want %v", own.ContractDigest, want)
	}
	given := ContractDigest(c)
	op, _, err := NewOperation(c, NewParams{ID: "op2", ProviderJobID: "j", ContractDigest: given}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(op.ContractDigest, want) {
		t.Fatalf("given digest %v, want %v", op.ContractDigest, want)
	}
	given["status"] = "changed"
	if op.ContractDigest["status"] != want["status"] {
		t.Fatal("the record shares the caller's digest map")
	}
}
