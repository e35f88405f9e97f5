package builtin_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pollwarden/pollwarden/contract"
)

// largeTranscript is AssemblyAI's own completed transcript
// (testdata/assemblyai-transcript/succeeded.json) with its words array
// repeated to n entries: the shape of a long recording with word
// timings, which is what passes the 1 MB default body.
func largeTranscript(tb testing.TB, n int) []byte {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "assemblyai-transcript", "succeeded.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		tb.Fatal(err)
	}
	words := doc["words"].([]any)
	long := make([]any, 0, n)
	for len(long) < n {
		long = append(long, words...)
	}
	doc["words"] = long[:n]
	out, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// BenchmarkExtractLargeTranscript measures reading a ~20 MB completed
// transcript through the built-in's paths (go test -bench
// ExtractLargeTranscript -benchmem ./contract/builtin).
func BenchmarkExtractLargeTranscript(b *testing.B) {
	ex, err := contract.Builtin("assemblyai-transcript")
	if err != nil {
		b.Fatal(err)
	}
	body := largeTranscript(b, 250_000)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if f := ex.Extract(body); f.State != "completed" || f.Problem != "" {
			b.Fatalf("state %q problem %q", f.State, f.Problem)
		}
	}
}
