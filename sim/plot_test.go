package sim

import (
	"bytes"
	"strings"
	"testing"
)

func TestPlot(t *testing.T) {
	if _, err := PlotFormat("rate.pdf"); err == nil {
		t.Error("a .pdf name was accepted")
	}
	r := mustRun(t, mustConfig(t, Outage, 300, 1))
	for _, f := range []string{"svg", "png"} {
		var buf bytes.Buffer
		if err := WritePlot(r, &buf, f); err != nil {
			t.Fatal(err)
		}
		if f == "svg" && !strings.Contains(buf.String(), "<svg") || buf.Len() < 1000 {
			t.Errorf("%s plot: %d bytes", f, buf.Len())
		}
	}
}
