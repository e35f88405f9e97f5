package cli

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/audit"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

var demoStart = time.Date(2030, 1, 2, 10, 20, 0, 0, time.UTC)

// runFixedDemo runs the demo with a fixed clock and a seeded random
// source and returns its output, with what changes between runs (the
// fake provider's port, the temporary directory, the chain's head, which
// covers both) replaced by placeholders.
func runFixedDemo(t *testing.T, sealer audit.Sealer) (string, *audit.Verifier) {
	t.Helper()
	var out bytes.Buffer
	dir := t.TempDir()
	env := Env{Stdout: &out, Stderr: new(bytes.Buffer)}
	v, err := env.demo(t.Context(), demoOptions{dir: dir, clock: pollwarden.NewJumpClock(demoStart),
		rand: rand.New(rand.NewPCG(1, 2)), loc: time.UTC, sealer: sealer})
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	s := strings.ReplaceAll(out.String(), dir, "$DIR")
	s = regexp.MustCompile(`127\.0\.0\.1:\d+`).ReplaceAllString(s, "127.0.0.1:PORT")
	s = strings.ReplaceAll(s, v.Hash(), "$HEAD")
	if sealer != nil {
		s = strings.ReplaceAll(s, "payloads sealed with key "+sealer.KeyID(), "plain payloads")
	}
	return s, v
}

// TestDemoGolden pins the whole tour: every outcome with its story (R26),
// each escalation's decision request and the commands that answer it,
// the approver's extension, the resumed submission. Run with -update to
// rewrite the file after a deliberate change, and review the diff.
func TestDemoGolden(t *testing.T) {
	got, v := runFixedDemo(t, nil)
	path := filepath.Join("testdata", "golden", "demo.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cli -run TestDemoGolden -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("the demo's output differs from %s:\n--- got\n%s", path, got)
	}
	if v.Operations() != int64(len(demoCases())+1) || v.Pos() == 0 {
		t.Fatalf("demo chain: %d operations, %d events", v.Operations(), v.Pos())
	}

	// Sealing changes how payloads are kept, not what the tour says.
	k, err := audit.ParseSealKey(audit.GenerateSealKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	sealed, sv := runFixedDemo(t, k)
	if sealed != got {
		t.Errorf("the sealed demo tells another story:\n%s", sealed)
	}
	if sv.Pos() != v.Pos() {
		t.Errorf("sealed demo has %d events, plain %d", sv.Pos(), v.Pos())
	}
}

// TestDemoTour checks what the tour must show, independently of the
// golden file's wording: every outcome and reason with its exit code,
// every escalation with a command per option, the submission resumed
// without a second job, --keep, and the pointer to a built-in contract.
func TestDemoTour(t *testing.T) {
	out, _ := runFixedDemo(t, nil)
	for _, o := range []struct {
		outcome string
		exit    int
	}{
		{"succeeded", 0}, {"failed", 10}, {"cancelled", 11}, {"expired", 12},
		{"escalated " + string(pollwarden.ReasonDeadlineExceeded), 20},
		{"escalated " + string(pollwarden.ReasonRequestBudgetExhausted), 21},
		{"escalated " + string(pollwarden.ReasonRateLimited), 22},
		{"escalated " + string(pollwarden.ReasonUnknownState), 23},
		{"escalated " + string(pollwarden.ReasonAuthorizationDenied), 24},
		{"escalated " + string(pollwarden.ReasonProviderFailure), 25},
		{"escalated " + string(pollwarden.ReasonIntegrationFailure), 26},
	} {
		if !regexp.MustCompile(`outcome: ` + o.outcome + `\b.*\(exit code ` + fmt.Sprint(o.exit) + `\)`).MatchString(out) {
			t.Errorf("the tour never shows %s (exit code %d)", o.outcome, o.exit)
		}
	}
	// Each escalation's options come with their command.
	for _, block := range strings.Split(out, "\n== ")[1:] {
		if !strings.Contains(block, "outcome: escalated") {
			continue
		}
		for _, m := range regexp.MustCompile(`\[(\w+)\] `).FindAllStringSubmatch(block, -1) {
			if !regexp.MustCompile(`pollwarden decide demo-\S+ ` + m[1] + ` --by NAME`).MatchString(block) {
				t.Errorf("option %s offered without the command that answers it:\n%s", m[1], block)
			}
		}
	}
	for _, want := range []string{
		"Extend waiting once by 15 minutes with 4 more status requests (new deadline",
		"decided extend",
		"interrupted before its answer was recorded; re-sent as attempt 2",
		"the provider received 2 submissions with one idempotency key and created 1 job (sub-1)",
		"pollwarden demo --keep",
		"next: wait on your own job",
		"--contract openai-batch",
		"intact",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tour lacks %q", want)
		}
	}
	if strings.Contains(out, demoToken) {
		t.Errorf("the demo printed its provider token")
	}
}
