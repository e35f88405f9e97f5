package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden/audit"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fakeClock advances only when slept on: the demo's waits take no time and
// its stories have fixed times.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(max(d, 0))
	c.mu.Unlock()
	return ctx.Err()
}

var demoStart = time.Date(2030, 1, 2, 10, 20, 0, 0, time.UTC)

// runFixedDemo runs the demo's six cases with a fake clock and a seeded
// random source and returns each case's outcome line and story.
func runFixedDemo(t *testing.T, sealer audit.Sealer) ([]string, *audit.Verifier) {
	t.Helper()
	var out []string
	env := Env{Stdout: new(bytes.Buffer), Stderr: new(bytes.Buffer)}
	v, err := env.demo(t.Context(), demoOptions{dir: t.TempDir(), clock: &fakeClock{now: demoStart},
		rand: rand.New(rand.NewPCG(1, 2)), loc: time.UTC, sealer: sealer,
		done: func(i int, r demoResult) {
			var b strings.Builder
			fmt.Fprintf(&b, "# %d. %s: %s (exit code %d); the provider saw %d status requests\n", i+1, r.title, r.outcome, r.exit, r.requests)
			for _, l := range r.story {
				b.WriteString(l + "\n")
			}
			out = append(out, b.String())
		}})
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	if len(out) != len(demoCases()) {
		t.Fatalf("%d demo cases ran, want %d", len(out), len(demoCases()))
	}
	return out, v
}

// TestDemoStoriesGolden pins the story (R26) of each of the demo's six
// outcomes. Run with -update to rewrite the files after a deliberate
// change, and review the diff.
func TestDemoStoriesGolden(t *testing.T) {
	stories, v := runFixedDemo(t, nil)
	for i, got := range stories {
		path := filepath.Join("testdata", "golden", fmt.Sprintf("demo-%d-%s.story", i+1, demoCases()[i].job))
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./cli -run TestDemoStoriesGolden -update to create it)", err)
		}
		if got != string(want) {
			t.Errorf("story of demo case %d differs from %s:\n--- got\n%s--- want\n%s", i+1, path, got, want)
		}
	}
	if v.Operations() != 6 || v.Pos() == 0 {
		t.Fatalf("demo chain: %d operations, %d events", v.Operations(), v.Pos())
	}

	// Sealing changes how payloads are kept, not what the story says.
	k, err := audit.ParseSealKey(audit.GenerateSealKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	sealed, sv := runFixedDemo(t, k)
	for i := range stories {
		if sealed[i] != stories[i] {
			t.Errorf("sealed demo case %d tells another story:\n%s\nplain:\n%s", i+1, sealed[i], stories[i])
		}
	}
	if sv.Pos() != v.Pos() {
		t.Errorf("sealed demo has %d events, plain %d", sv.Pos(), v.Pos())
	}
}
