package cli

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// TestDemoKeepCommandsWork: every command demo --keep suggests for its
// kept store runs as printed (with NAME filled in and no $USER), after
// the demo's fake provider has stopped; and the text says that the
// provider is gone rather than promising a resumable wait.
func TestDemoKeepCommandsWork(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	env := Env{Stdout: &out, Stderr: new(bytes.Buffer)}
	if _, err := env.demo(t.Context(), demoOptions{dir: dir, clock: pollwarden.NewJumpClock(demoStart),
		rand: rand.New(rand.NewPCG(1, 2)), loc: time.UTC, keep: true}); err != nil {
		t.Fatal(err)
	}
	_, tail, ok := strings.Cut(out.String(), "store and contract kept in "+dir)
	if !ok {
		t.Fatalf("--keep does not say where the store is:\n%s", out.String())
	}
	tail, _, _ = strings.Cut(tail, "\nnext:")
	if !strings.Contains(tail, "fake provider stopped with the demo") || strings.Contains(tail, "pollwarden wait") {
		t.Errorf("--keep should say the provider is gone and offer no wait:\n%s", tail)
	}
	vars := map[string]string{}
	var cmds [][]string
	for line := range strings.SplitSeq(tail, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 1 && f[0] == "export":
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				vars[k] = v
			}
		case len(f) > 1 && f[0] == "pollwarden":
			cmds = append(cmds, f[1:])
		}
	}
	if vars["POLLWARDEN_STORE"] == "" || len(cmds) < 4 {
		t.Fatalf("want an export line and the commands, got %v and %q", vars, cmds)
	}
	for _, args := range cmds {
		for i, a := range args {
			if a == "NAME" {
				args[i] = "reader"
			}
		}
		var stdout, stderr bytes.Buffer
		run := Env{Stdin: &bytes.Buffer{}, Stdout: &stdout, Stderr: &stderr,
			Getenv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
		if code := Main(context.Background(), args, run); code != 0 {
			t.Errorf("pollwarden %s: exit %d: %s%s", strings.Join(args, " "), code, stderr.String(), stdout.String())
		}
	}
}
