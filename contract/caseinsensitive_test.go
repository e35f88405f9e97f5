package contract

import (
	"strings"
	"testing"
)

func TestCaseInsensitiveStates(t *testing.T) {
	src := "version: 1\nname: az\nstatus: {url: \"https://h/{job_id}\"}\nstate: {path: status, case_insensitive: true, pending: [Running], success: [Succeeded]}\n"
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string]string{`{"status":"running"}`: "Running", `{"status":"SUCCEEDED"}`: "Succeeded", `{"status":"Paused"}`: "Paused"} {
		if f := ex.Extract([]byte(body)); f.State != want {
			t.Errorf("Extract(%s).State = %q, want %q", body, f.State, want)
		}
	}
	strict, _ := Parse([]byte(strings.Replace(src, "case_insensitive: true, ", "", 1)))
	ex, _ = Compile(strict)
	if f := ex.Extract([]byte(`{"status":"running"}`)); f.State != "running" {
		t.Errorf("without case_insensitive the state is kept as sent, got %q", f.State)
	}
	_, err = Parse([]byte(strings.Replace(src, "success: [Succeeded]", "success: [running]", 1)))
	if err == nil || !strings.Contains(err.Error(), `"running" is already listed in state.pending`) {
		t.Fatalf("values equal but for case in two lists: %v", err)
	}
}

// TestProviderStateKept: what the provider said is kept next to a state
// the contract built or re-spelled, and only when it differs.
func TestProviderStateKept(t *testing.T) {
	src := "version: 1\nname: ab\nstatus: {url: \"https://h/{job_id}\"}\n" +
		"state: {path: \"processing_status == 'ended' && cancel_initiated_at != null && 'ended_after_cancel' || processing_status\", raw: processing_status, pending: [in_progress], success: [ended], cancelled: [ended_after_cancel]}\n"
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := Compile(c)
	if f := ex.Extract([]byte(`{"processing_status":"ended","cancel_initiated_at":"2024-09-24T18:39:03Z"}`)); f.State != "ended_after_cancel" || f.ProviderState != "ended" {
		t.Fatalf("built state: %+v", f)
	}
	if f := ex.Extract([]byte(`{"processing_status":"in_progress"}`)); f.ProviderState != "" {
		t.Fatalf("provider state equal to the state is not repeated: %+v", f)
	}
}
