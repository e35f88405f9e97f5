package recordjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// TestStoredRecordsRoundTrip: the records a store of commit e330539 (the
// last to encode with encoding/json) wrote during `pollwarden demo` (every
// outcome, escalations, a decision, a cancel, a submission) are read
// without encoding/json, to what json.Unmarshal reads, and written back
// to the very same text.
func TestStoredRecordsRoundTrip(t *testing.T) {
	f, err := os.Open("testdata/demo-records-e330539.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		rec := sc.Text()
		n++
		var want, got pollwarden.Operation
		if err := json.Unmarshal([]byte(rec), &want); err != nil {
			t.Fatalf("record %d: %v", n, err)
		}
		d := decoder{s: rec}
		if !d.operation(&got) {
			t.Fatalf("record %d: the fast path refused it at byte %d: %s", n, d.i, rec)
		}
		again, err := AppendOperation(nil, &got)
		if err != nil || !bytes.Equal(again, []byte(rec)) {
			t.Fatalf("record %d: %v\n got %s\nwant %s", n, err, again, rec)
		}
	}
	if err := sc.Err(); err != nil || n < 10 {
		t.Fatalf("read %d records: %v", n, err)
	}
}
