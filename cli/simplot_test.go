//go:build plot

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSimPlot: a binary built with -tags plot draws `sim --plot`.
func TestSimPlot(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "rate.svg")
	code, _, errs := runSim(t, "--scenario", "outage", "--n", "400", "--experimental", "--plot", plot)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(plot)
	if err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("plot: %v, %d bytes", err, len(b))
	}
}
