package contract

import (
	"strings"
	"testing"
)

func TestStatusCodesAsStates(t *testing.T) {
	src := "version: 1\nname: del\nstatus: {url: \"https://h/{job_id}\"}\nstate: {path: status, pending: [Deleting], success: [Deleted], status_codes: {\"404\": Deleted, \"202\": Deleting}}\n"
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := Compile(c)
	if f := ex.ExtractAnswer(404, []byte(`{"error":{"code":"NotFound"}}`)); f.State != "Deleted" || !f.FromStatus || f.Problem != "" {
		t.Fatalf("404 of a deletion wait: %+v", f)
	}
	if f := ex.ExtractAnswer(202, nil); f.State != "Deleting" || !f.FromStatus || f.Problem != "" {
		t.Fatalf("202 with no body: %+v", f)
	}
	if f := ex.ExtractAnswer(200, []byte(`{"status":"Deleting"}`)); f.FromStatus || f.State != "Deleting" {
		t.Fatalf("an unmapped code reads the body: %+v", f)
	}
	for bad, want := range map[string]string{
		`{"429": Deleted}`: `state.status_codes.429: must be an HTTP status 200 to 299, 404 or 410`,
		`{"503": Deleted}`: `state.status_codes.503: must be an HTTP status`,
		`{"404": Gone}`:    `state.status_codes.404: "Gone" is in none of the state lists`,
	} {
		_, err := Parse([]byte(strings.Replace(src, `{"404": Deleted, "202": Deleting}`, bad, 1)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("status_codes %s: %v; want %q", bad, err, want)
		}
	}
}
