package pollwarden

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckJSONTextNamesTheField(t *testing.T) {
	for _, tc := range []struct{ body, field string }{
		{"{\"contract\":\"c\",\"job_id\":\"run-\xff\"}", "job_id is not valid UTF-8"},
		{"{\"a\":1,\"vars\":{\"ok\":\"x\",\"region\":\"eu-\xc3\"}}", "vars.region is not valid UTF-8"},
		{"{\"items\":[\"a\",{\"b\":[1,\"\xfe\"]}]}", "items[1].b[1] is not valid UTF-8"},
		{"{\"ok\":\"\",\"k\xff\":1}", "a field name is not valid UTF-8"},
		{"\"\xff\"", "the body is not valid UTF-8"},
		{`{"ok":"\ud83d\ude00","job_id":"run-\ud800"}`, "job_id is not valid UTF-8"},
		{`{"job_id":"\\ud800","operation_id":"\udc00x"}`, "operation_id is not valid UTF-8"},
		{`{"a":"\ud800\u0041"}`, "a is not valid UTF-8"},
	} {
		err := CheckJSONText([]byte(tc.body))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("CheckJSONText(%q) = %v, want %q", tc.body, err, tc.field)
		}
	}
	if err := CheckJSONText([]byte(`{"job_id":"run-é-\u00ff-\ud83d\ude00-\\ud800"}`)); err != nil {
		t.Errorf("valid UTF-8 refused: %v", err)
	}
}

func TestCheckText(t *testing.T) {
	if err := CheckText("--job-id", "\xff"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "--job-id is not valid UTF-8") {
		t.Errorf("CheckText: %v", err)
	}
	if err := CheckText("--job-id", "run-é"); err != nil {
		t.Errorf("CheckText of valid text: %v", err)
	}
}
