package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionStampedAtLinkTime builds the binary as `make dist` does,
// with the version given to the linker, and finds it in both
// `pollwarden --version` and `pollwarden version`.
func TestVersionStampedAtLinkTime(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "pollwarden")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7-stamp", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("pollwarden %s: %v", args[0], err)
		}
		if got := string(out); !strings.HasPrefix(got, "pollwarden v9.8.7-stamp (go") {
			t.Errorf("pollwarden %s printed %q, want the stamped version v9.8.7-stamp", args[0], got)
		}
	}
}
