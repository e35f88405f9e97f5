package pollwarden

import (
	"strings"
	"testing"
	"time"
)

// TestExtensionRequestProblems: either extra may be zero, not both; none
// negative; a justification is required and bounded. Each problem names
// its field, and Check refuses what Problems lists.
func TestExtensionRequestProblems(t *testing.T) {
	for name, tc := range map[string]struct {
		e      ExtensionRequest
		fields string
	}{
		"time only":          {ExtensionRequest{ExtraTime: time.Minute, Justification: "slow"}, ""},
		"requests only":      {ExtensionRequest{ExtraStatusRequests: 2, Justification: "slow"}, ""},
		"both zero":          {ExtensionRequest{Justification: "slow"}, "extra_time"},
		"negative":           {ExtensionRequest{ExtraTime: -time.Minute, ExtraStatusRequests: -1, Justification: "slow"}, "extra_time,extra_status_requests"},
		"no justification":   {ExtensionRequest{ExtraTime: time.Minute, Justification: " \t"}, "justification"},
		"long justification": {ExtensionRequest{ExtraTime: time.Minute, Justification: strings.Repeat("x", maxJustification+1)}, "justification"},
	} {
		var fields []string
		for _, p := range tc.e.Problems() {
			fields = append(fields, p.Field)
			if !strings.Contains(p.Message, p.Field) {
				t.Errorf("%s: %q does not name %s", name, p.Message, p.Field)
			}
		}
		if got := strings.Join(fields, ","); got != tc.fields {
			t.Errorf("%s: problems on %q, want %q", name, got, tc.fields)
		}
		if err := tc.e.Check(); (err != nil) != (tc.fields != "") {
			t.Errorf("%s: Check %v", name, err)
		}
	}
}
