package simplot

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden/sim"
)

func TestPlot(t *testing.T) {
	if _, err := Format("rate.pdf"); err == nil {
		t.Error("a .pdf name was accepted")
	}
	cfg, err := sim.DefaultConfig(sim.Outage, 300, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"svg", "png"} {
		var buf bytes.Buffer
		if err := Write(r, &buf, f); err != nil {
			t.Fatal(err)
		}
		if f == "svg" && !strings.Contains(buf.String(), "<svg") || buf.Len() < 1000 {
			t.Errorf("%s plot: %d bytes", f, buf.Len())
		}
	}
}
