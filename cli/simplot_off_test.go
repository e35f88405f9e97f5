//go:build !plot

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimPlotNeedsTag: the default build refuses --plot before simulating,
// says how to get a plot, and writes no file.
func TestSimPlotNeedsTag(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "rate.svg")
	code, out, errs := runSim(t, "--scenario", "outage", "--n", "400", "--plot", plot)
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d: %s", code, ExitUsage, errs)
	}
	for _, want := range []string{"-tags plot", "go run ./bench"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q: %s", want, errs)
		}
	}
	if out != "" {
		t.Errorf("simulated anyway: %s", out)
	}
	if _, err := os.Stat(plot); !os.IsNotExist(err) {
		t.Errorf("a plot file exists: %v", err)
	}
}
