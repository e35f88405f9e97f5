// Package simplot draws a simulation report's request rate over time. It
// is apart from package sim because the plotting library (gonum) adds
// megabytes to any binary that links it: the bench program does, the
// pollwarden binary only when built with -tags plot.
package simplot

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/pollwarden/pollwarden/sim"
)

// Format returns the image format for a file name ("svg" or "png"), or
// an error for any other extension.
func Format(file string) (string, error) {
	switch f := strings.ToLower(strings.TrimPrefix(filepath.Ext(file), ".")); f {
	case "svg", "png":
		return f, nil
	}
	return "", fmt.Errorf("plot file %q: want a .svg or .png name", file)
}

// Write draws the request rate over time (1 s bins, log scale) of every
// strategy in rep, as format ("svg" or "png").
func Write(rep *sim.Report, w io.Writer, format string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("pollwarden sim --scenario %s --n %d --seed %d", rep.Scenario, rep.N, rep.Seed)
	if l := rep.Params.CallbackLoss; l != nil {
		p.Title.Text += fmt.Sprintf(" --callback-loss %g", *l)
	}
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "status requests per second (1 s bins, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min = 1
	p.Legend.Top = true
	horizon := plotHorizon(rep)
	peak := 1.0
	for i, s := range rep.Strategies {
		n := min(len(s.Rate), horizon)
		xys := make(plotter.XYs, n)
		for b := range n {
			// A silent second is drawn below the axis (and clipped): a log
			// scale has no zero.
			xys[b].X, xys[b].Y = float64(b)+0.5, max(float64(s.Rate[b]), 0.5)
			peak = max(peak, xys[b].Y)
		}
		if n == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		l.Width = vg.Points(1)
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	p.X.Min, p.X.Max = 0, float64(horizon)
	p.Y.Max = peak * 1.5
	wt, err := p.WriterTo(10*vg.Inch, 5*vg.Inch, format)
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}

// plotHorizon is where the plot stops: once every strategy has sent
// 99.5 % of its requests, at least 300 s and a minute past a restart or
// outage.
func plotHorizon(rep *sim.Report) int {
	h := 300
	for _, v := range rep.Params.DownS {
		h = max(h, v+60)
	}
	for _, v := range rep.Params.OutageS {
		h = max(h, v+150)
	}
	for _, s := range rep.Strategies {
		var total, run int64
		for _, c := range s.Rate {
			total += int64(c)
		}
		for b, c := range s.Rate {
			run += int64(c)
			if float64(run) >= 0.995*float64(total) {
				h = max(h, b+1)
				break
			}
		}
	}
	return h
}
