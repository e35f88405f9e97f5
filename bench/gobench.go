package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// benchPackages are the packages whose Benchmark… functions are run. The
// store-bound ones get a fixed iteration count (their setup is heavy and
// their figures are rates they report themselves); the pure ones a time.
var benchPackages = []struct {
	pkg           string
	quick, full   string // -benchtime
	quickN, fullN int    // -count
}{
	{"./policy/", "0.5s", "2s", 1, 5},
	{"./audit/", "0.5s", "2s", 1, 3},
	{"./sqlite/", "300x", "2s", 1, 3},
	{"./controller/", "300x", "3s", 1, 3},
	{"./scheduler/", "200x", "20000x", 1, 3},
	{"./sim/", "1x", "1x", 1, 3},
}

// goBenchmarks runs `go test -bench` over benchPackages and tabulates
// every result line with every metric it reports.
func goBenchmarks(ctx context.Context, c *config, w *bytes.Buffer) error {
	fmt.Fprintf(w, "### Go benchmarks\n\n")
	pg := os.Getenv("POLLWARDEN_TEST_PG")
	if pg == "" {
		fmt.Fprintf(w, "POLLWARDEN_TEST_PG was not set: the PostgreSQL benchmarks skipped themselves.\n\n")
	}
	fmt.Fprintf(w, "| package | benchmark | runs | figures |\n|---|---|---|---|\n")
	for _, p := range benchPackages {
		bt, n := p.quick, p.quickN
		if c.full {
			bt, n = p.full, p.fullN
		}
		args := []string{"test", "-run", "^$", "-bench", c.pattern, "-benchmem", "-benchtime", bt, "-count", fmt.Sprint(n), "-timeout", "60m", p.pkg}
		logf("go %s", strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, "go", args...)
		out, err := cmd.CombinedOutput()
		rows := parseBench(out)
		if err != nil && len(rows) == 0 {
			fmt.Fprintf(w, "| `%s` | (failed: %s) | | |\n", p.pkg, strings.TrimSpace(lastLine(out)))
			continue
		}
		for _, r := range rows {
			fmt.Fprintf(w, "| `%s` | `%s` | %d | %s |\n", strings.Trim(p.pkg, "./"), r.name, r.runs, strings.Join(r.figures, "; "))
		}
		fmt.Fprintf(w, "|  | command: `go %s` | | |\n", strings.Join(args, " "))
	}
	fmt.Fprintln(w)
	return nil
}

type benchRow struct {
	name    string
	runs    int
	figures []string
}

// parseBench reads `go test -bench` output; repeated runs of one
// benchmark (-count) are gathered as ranges "lo–hi unit".
func parseBench(out []byte) []benchRow {
	type acc struct {
		units []string
		lo    map[string]float64
		hi    map[string]float64
		runs  int
	}
	var order []string
	all := map[string]*acc{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndex(name, "-"); i > 0 {
			name = name[:i]
		}
		a := all[name]
		if a == nil {
			a = &acc{lo: map[string]float64{}, hi: map[string]float64{}}
			all[name] = a
			order = append(order, name)
		}
		a.runs++
		for i := 2; i+1 < len(f); i += 2 {
			var v float64
			if _, err := fmt.Sscan(f[i], &v); err != nil {
				break
			}
			u := f[i+1]
			if u == "ns/op" && v == 0 {
				continue // a benchmark that reports its own rate
			}
			if _, ok := a.lo[u]; !ok {
				a.units = append(a.units, u)
				a.lo[u], a.hi[u] = v, v
			}
			a.lo[u], a.hi[u] = min(a.lo[u], v), max(a.hi[u], v)
		}
	}
	var rows []benchRow
	for _, name := range order {
		a := all[name]
		r := benchRow{name: name, runs: a.runs}
		for _, u := range a.units {
			if a.lo[u] == a.hi[u] {
				r.figures = append(r.figures, fmt.Sprintf("%s %s", num(a.lo[u]), u))
			} else {
				r.figures = append(r.figures, fmt.Sprintf("%s–%s %s", num(a.lo[u]), num(a.hi[u]), u))
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		return s[i+1:]
	}
	return s
}
