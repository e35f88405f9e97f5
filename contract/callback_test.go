package contract

import (
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

const cbHead = `version: 1
name: openai-batch
status: {url: "https://api.openai.com/v1/batches/{job_id}"}
state: {path: status, pending: [in_progress], success: [completed]}
`

func TestCallbackBlockParses(t *testing.T) {
	c, err := Parse([]byte(cbHead + `callback:
  verify: standard-webhooks
  secret: env:OPENAI_WEBHOOK_SECRET
  job_id_path: data.id
  event_filter: "type == 'batch.completed'"
`))
	if err != nil {
		t.Fatal(err)
	}
	want := pollwarden.CallbackSpec{Verify: pollwarden.CallbackStandardWebhooks, SecretRef: "env:OPENAI_WEBHOOK_SECRET",
		JobIDPath: "data.id", EventFilter: "type == 'batch.completed'"}
	if c.Callback == nil || *c.Callback != want {
		t.Fatalf("callback %+v, want %+v", c.Callback, want)
	}
	c, err = Parse([]byte(cbHead))
	if err != nil || c.Callback != nil {
		t.Fatalf("without a block: %+v, %v", c.Callback, err)
	}
}

// Each mistake is named; a secret written in place of a reference is
// refused without being echoed.
func TestCallbackBlockProblems(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{"callback: {verify: hmac, secret: env:S, job_id_path: id}", "callback.verify: must be standard-webhooks or github, got \"hmac\""},
		{"callback: {secret: env:S, job_id_path: id}", "callback.verify: missing (required)"},
		{"callback: {verify: github, job_id_path: id}", "callback.secret: missing (required)"},
		{"callback: {verify: github, secret: whsec_c2VjcmV0LXZhbHVl, job_id_path: id}", "must be env:NAME or file:PATH"},
		{"callback: {verify: github, secret: env:S}", "callback.job_id_path: missing (required)"},
		{"callback: {verify: github, secret: env:S, job_id_path: 'a[['}", "callback.job_id_path"},
		{"callback: {verify: github, secret: env:S, job_id_path: id, event_filter: '=='}", "callback.event_filter"},
		{"callback: {verify: github, secret: env:S, job_id_path: id, url: x}", "callback.url"},
	} {
		_, err := Parse([]byte(cbHead + tc.block + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.block, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "c2VjcmV0LXZhbHVl") {
			t.Errorf("%s: the error echoes the secret: %v", tc.block, err)
		}
	}
}

func TestCallbackJob(t *testing.T) {
	cb := &pollwarden.CallbackSpec{JobIDPath: "data.id", EventFilter: "type == 'batch.completed'"}
	for _, tc := range []struct {
		body, id string
		wanted   bool
		err      string
	}{
		{`{"type":"batch.completed","data":{"id":"batch_1"}}`, "batch_1", true, ""},
		{`{"type":"batch.failed","data":{"id":"batch_1"}}`, "", false, ""},
		{`{"type":"batch.completed","data":{"id":42}}`, "42", true, ""},
		{`{"type":"batch.completed","data":{}}`, "", false, "finds nothing"},
		{`{"type":"batch.completed","data":{"id":{"x":1}}}`, "", false, "not a job id"},
		{`{"type":"batch.completed","data":{"id":""}}`, "", false, "empty"},
		{`not json`, "", false, "not JSON"},
	} {
		id, wanted, err := CallbackJob(cb, []byte(tc.body))
		if id != tc.id || wanted != tc.wanted || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("CallbackJob(%s) = %q, %v, %v; want %q, %v, error with %q", tc.body, id, wanted, err, tc.id, tc.wanted, tc.err)
		}
	}
	// Without a filter every event counts.
	id, wanted, err := CallbackJob(&pollwarden.CallbackSpec{JobIDPath: "workflow_run.id"}, []byte(`{"action":"completed","workflow_run":{"id":30433642}}`))
	if id != "30433642" || !wanted || err != nil {
		t.Errorf("GitHub workflow_run: %q, %v, %v", id, wanted, err)
	}
}
