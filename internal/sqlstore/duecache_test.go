package sqlstore

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

func recordOf(t *testing.T, op *pollwarden.Operation) string {
	t.Helper()
	b, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDueCacheAnswersAsDecodingWould: the cache gives what decoding the
// stored text gives — a copy the caller may change, the new record once
// the text changed (even at the same version) — and stays bounded.
func TestDueCacheAnswersAsDecodingWould(t *testing.T) {
	var c dueCache
	op := &pollwarden.Operation{ID: "a", Contract: "c", Phase: pollwarden.PhaseWaiting, NextPollAt: time.Unix(100, 0).UTC(),
		Vars: map[string]string{"k": "v"}}
	rec := recordOf(t, op)
	first, err := c.decode("a", 3, rec)
	if err != nil {
		t.Fatal(err)
	}
	first.Vars["k"] = "changed by the caller"
	first.StatusRequestsUsed = 99
	second, err := c.decode("a", 3, rec)
	if err != nil {
		t.Fatal(err)
	}
	if second == first || second.Vars["k"] != "v" || second.StatusRequestsUsed != 0 || second.Version != 3 {
		t.Fatalf("the second answer shares or keeps the first caller's changes: %+v", second)
	}
	op.StatusRequestsUsed = 5
	third, err := c.decode("a", 3, recordOf(t, op))
	if err != nil {
		t.Fatal(err)
	}
	if third.StatusRequestsUsed != 5 {
		t.Fatalf("a changed text at the same version gave the cached record: %+v", third)
	}
	for i := range 3 * maxDueCache {
		o := &pollwarden.Operation{ID: fmt.Sprint(i)}
		if _, err := c.decode(o.ID, 1, recordOf(t, o)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.m) > maxDueCache {
		t.Fatalf("%d records kept, bound %d", len(c.m), maxDueCache)
	}
	if _, err := c.decode("bad", 1, "{not json"); err == nil {
		t.Fatal("a record that does not decode gave no error")
	}
}
