//go:build plot

package cli

import (
	"io"

	"github.com/pollwarden/pollwarden/sim"
	"github.com/pollwarden/pollwarden/sim/simplot"
)

// plotFormat and writePlot draw `sim --plot`; this binary was built with
// -tags plot, so it links the plotting library.
func plotFormat(file string) (string, error) { return simplot.Format(file) }

func writePlot(rep *sim.Report, w io.Writer, format string) error {
	return simplot.Write(rep, w, format)
}
