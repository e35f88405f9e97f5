//go:build !plot

package cli

import (
	"errors"
	"io"

	"github.com/pollwarden/pollwarden/sim"
)

// errNoPlot answers `sim --plot` in the default build, which leaves the
// plotting library out to keep the binary small, with the two ways to get
// a plot.
var errNoPlot = errors.New("--plot: this pollwarden was built without plotting; " +
	"build one that draws with `go build -tags plot ./cmd/pollwarden`, " +
	"or draw every scenario beside docs/BENCHMARKS.md with `go run ./bench -only sim`")

func plotFormat(string) (string, error) { return "", errNoPlot }

func writePlot(*sim.Report, io.Writer, string) error { return errNoPlot }
