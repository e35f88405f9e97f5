package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// TestStoredPayloadsReencode: the event payloads a store of commit
// e330539 wrote during `pollwarden demo` (every kind of event the demo
// makes, options and provider errors included) are what Payload writes
// now for the same data, byte for byte, so their digests and the chain's
// hashes are unchanged.
func TestStoredPayloadsReencode(t *testing.T) {
	f, err := os.Open("testdata/demo-payloads-e330539.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var d pollwarden.EventData
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("payload %d: %v", n, err)
		}
		got, err := Payload(d)
		if err != nil || !bytes.Equal(got, sc.Bytes()) {
			t.Fatalf("payload %d: %v\n got %s\nwant %s", n, err, got, sc.Bytes())
		}
	}
	if err := sc.Err(); err != nil || n < 100 {
		t.Fatalf("read %d payloads: %v", n, err)
	}
}
