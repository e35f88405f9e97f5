package doortest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden/audit"
)

// TestDoorsRecordTheResume: the API and MCP, like `wait`, leave a
// "resumed by" line in the story of a waiting operation they take up
// again, naming the door and the caller, and a lowered limit taken up is
// said old → new.
func TestDoorsRecordTheResume(t *testing.T) {
	for name, tc := range map[string]struct {
		d    door
		want string
	}{
		"api": {httpDoor{}, "resumed by POST /v1/operations (" + agentName + ")"},
		"mcp": {mcpDoor{}, "resumed by MCP watch_job ("},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			first := tc.d.do(t, r, ok("run"))
			r.editContract(t, "max_status_requests: 5", "max_status_requests: 4")
			again := tc.d.do(t, r, ok("run"))
			if first.class != accepted || again.class != accepted || again.id != first.id {
				t.Fatalf("first %+v, again %+v", first, again)
			}
			story := storyOf(t, r, first.id)
			if !strings.Contains(story, tc.want) {
				t.Errorf("no %q in the story:\n%s", tc.want, story)
			}
			if !strings.Contains(story, "contract changed: limits.max_status_requests 5 → 4") {
				t.Errorf("the lowered limit is not in the story:\n%s", story)
			}
		})
	}
}

func storyOf(t *testing.T, r *rig, id string) string {
	t.Helper()
	evs, err := r.store.EventList(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(audit.Line(e, time.UTC) + "\n")
	}
	return b.String()
}

// TestDoorsRecordTheSubmitResume: a submission sent again through any
// door resumes the operation, never submitting twice, and says so in its
// story with the door's name.
func TestDoorsRecordTheSubmitResume(t *testing.T) {
	for door, want := range map[string]string{
		"cli":  "resumed by pollwarden submit (",
		"http": "resumed by POST /v1/operations (" + agentName + ")",
		"mcp":  "resumed by MCP submit_job (",
	} {
		t.Run(door, func(t *testing.T) {
			r := submitRig(t)
			for range 2 {
				if a := submitDoors[door](t, r, "op-sub"); a.class != accepted || a.id != "op-sub" {
					t.Fatalf("submission answered %s (%q): %s", a.class, a.id, a.text)
				}
			}
			if n := r.fp.Submits(); n != 1 {
				t.Fatalf("the provider created %d jobs, want 1", n)
			}
			if story := storyOf(t, r, "op-sub"); !strings.Contains(story, want) {
				t.Errorf("no %q in the story:\n%s", want, story)
			}
		})
	}
}
