package prober

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestScrubSigV4 holds the scrub of an echoed SigV4 authorization to every
// form it reaches the record in: the header, a presigned query (raw and
// percent-encoded), a JSON body, and with no credential scrubber at all.
func TestScrubSigV4(t *testing.T) {
	const keyID, sig = "AKIAIOSFODNN7EXAMPLE", "7a8951fe1a2c6c0a2b1e3a6e3f8e3a2b5c0f4d3e2a1b0c9d8e7f6a5b4c3d2e1f"
	header := "AWS4-HMAC-SHA256 Credential=" + keyID + "/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + sig
	query := "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + keyID + "%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=" + sig
	for _, in := range []string{header, query, strings.ReplaceAll(query, "&", "%26"), `echo: "` + strings.ReplaceAll(header, "/", `\/`) + `"`} {
		for _, sc := range []*scrubber{nil, newScrubber([]string{"unrelated-secret-123456"}, nil)} {
			out := sc.text(in)
			if strings.Contains(out, keyID) || strings.Contains(out, sig) || strings.Contains(out, "aws4_request") {
				t.Errorf("%q kept the scope or signature: %q", in, out)
			}
			if !strings.Contains(strings.ToLower(out), "signature=[redacted]") {
				t.Errorf("%q: the name of what was removed is gone: %q", in, out)
			}
		}
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"auth": header}})
	if out := string((*scrubber)(nil).raw(body)); strings.Contains(out, keyID) || strings.Contains(out, sig) {
		t.Errorf("raw kept it: %s", out)
	}
	// Text that only mentions the words is kept.
	for _, keep := range []string{"Signature mismatch", "credential=short", "state: signature=pending"} {
		if out := (*scrubber)(nil).text(keep); out != keep {
			t.Errorf("%q became %q", keep, out)
		}
	}
}
