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
