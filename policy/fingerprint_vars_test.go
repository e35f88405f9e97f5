package policy

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestFingerprintCoversVars: the same job id under other variables is
// another job, and a record without variables keeps its old fingerprint.
func TestFingerprintCoversVars(t *testing.T) {
	c := &pollwarden.ContractSpec{Name: "gh", Status: pollwarden.StatusCall{Method: "GET", URL: "https://h/{owner}/{job_id}"},
		Limits: pollwarden.Limits{Deadline: time.Hour, MaxStatusRequests: 3, MaxTransportFailures: 1, MaxRateLimited: 1}}
	a := FingerprintVars(c, "1", "", "", map[string]string{"owner": "a"})
	b := FingerprintVars(c, "1", "", "", map[string]string{"owner": "b"})
	if a == b {
		t.Fatal("fingerprint ignores the variables")
	}
	if FingerprintVars(c, "1", "", "", nil) != Fingerprint(c, "1", "", "") {
		t.Fatal("fingerprint without variables changed")
	}
	op, _, err := NewOperation(c, NewParams{ID: "o", ProviderJobID: "1", Vars: map[string]string{"owner": "a"}}, time.Now())
	if err != nil || op.Vars["owner"] != "a" || op.Fingerprint != a {
		t.Fatalf("NewOperation: %+v, %v", op, err)
	}
}
