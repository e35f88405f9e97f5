package contract

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden/contract/builtin"
)

func TestTopKeys(t *testing.T) {
	got := topKeys(`status == 'completed' && audio_url == 'http://x.y' && 'done' || status`, `"weird key".x`, "error.code == `-32602`")
	for _, k := range []string{"status", "audio_url", "weird key", "x", "error", "code"} {
		if !got[k] {
			t.Errorf("%q not kept: %v", k, got)
		}
	}
	for _, k := range []string{"completed", "http", "done", "32602"} {
		if got[k] {
			t.Errorf("%q, inside a literal, kept: %v", k, got)
		}
	}
	for _, e := range []string{"*.status", "keys(@)", "values(@)[0]"} {
		if topKeys("status", e) != nil {
			t.Errorf("%s may read any key, yet keys were pruned", e)
		}
	}
}

// Every built-in's every path reads the same value from every fixture
// whether the body is decoded whole or pruned to the keys its paths name.
func TestPrunedDecodeReadsWhatTheFullDecodeReads(t *testing.T) {
	for _, name := range builtin.Names() {
		ex, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		c := ex.Spec()
		paths := []string{c.State.Path, c.State.RawPath, c.Result.ErrorPath, c.Hints.PollAfterSeconds, c.Hints.JobExpiresAt, c.Hints.JobExpiresAfter}
		for _, f := range c.Result.Require {
			paths = append(paths, f.Path)
		}
		files, _ := filepath.Glob(filepath.Join("builtin", "testdata", name, "*.json"))
		for _, file := range files {
			body, err := os.ReadFile(file)
			if err != nil || strings.HasSuffix(file, ".meta.json") || !json.Valid(body) || len(body) == 0 {
				continue
			}
			var full any
			_ = json.Unmarshal(body, &full)
			pruned, err := decodePruned(body, ex.keep)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			for _, p := range paths {
				if p == "" {
					continue
				}
				jp, _ := compileExpr(p)
				want, _ := search(jp, full)
				got, _ := search(jp, pruned)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s, path %s: pruned reads %v, full %v", file, p, got, want)
				}
			}
		}
	}
}

func TestPrunedDecodeEdges(t *testing.T) {
	keep := map[string]bool{"a": true}
	doc, err := decodePruned([]byte(` {"b": [1, {"a": "}"}], "a": 1, "c": "x\"}", "a": 2} `), keep)
	if err != nil || !reflect.DeepEqual(doc, map[string]any{"a": 2.0}) {
		t.Errorf("got %v, %v; want the last a only", doc, err)
	}
	for _, bad := range []string{`{"a":1} x`, `{"b":[1,,2],"a":1}`, `{"a":1`, ``} {
		var full any
		want := json.Unmarshal([]byte(bad), &full)
		if _, err := decodePruned([]byte(bad), keep); err == nil || err.Error() != want.Error() {
			t.Errorf("%q: error %v, want json's own %v", bad, err, want)
		}
	}
	if doc, err := decodePruned([]byte(`[1,2]`), keep); err != nil || !reflect.DeepEqual(doc, []any{1.0, 2.0}) {
		t.Errorf("a list body: %v, %v", doc, err)
	}
}
