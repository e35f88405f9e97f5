package main

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/sim"
)

func TestParseBenchGathersRunsIntoRanges(t *testing.T) {
	out := []byte(`goos: linux
BenchmarkDecide-2   	  200000	      1100 ns/op	    2376 B/op	       6 allocs/op
BenchmarkDecide-2   	  200000	      1250 ns/op	    2376 B/op	       6 allocs/op
BenchmarkSchedulerThroughput/ops=1000-2   	     500	         0 ns/op	      2100 requests/s
PASS
`)
	rows := parseBench(out)
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	if got := strings.Join(rows[0].figures, "; "); rows[0].runs != 2 || got != "1100–1250 ns/op; 2376 B/op; 6 allocs/op" {
		t.Errorf("Decide: %d runs, %q", rows[0].runs, got)
	}
	if got := strings.Join(rows[1].figures, "; "); got != "2100 requests/s" {
		t.Errorf("a benchmark reporting its own rate keeps only it: %q", got)
	}
}

// TestBurstinessMatchesTheSimulationsMeasure: an even rate scores 1, one
// bin holding twice the others scores about 2, and bins under the floor
// are not measured.
func TestBurstinessMatchesTheSimulationsMeasure(t *testing.T) {
	origin := time.Unix(0, 0)
	var even, bump []time.Time
	for b := range 120 {
		k := 200
		if b == 60 {
			k = 400
		}
		for i := range 200 {
			even = append(even, origin.Add(time.Duration(b)*time.Second+time.Duration(i)*time.Millisecond))
		}
		for i := range k {
			bump = append(bump, origin.Add(time.Duration(b)*time.Second+time.Duration(i)*time.Millisecond))
		}
	}
	if got, _, bins := burstiness(even, origin, time.Second); math.Abs(got-1) > 1e-9 || bins == 0 {
		t.Errorf("even: %v over %d bins", got, bins)
	}
	if got, at, _ := burstiness(bump, origin, time.Second); at != 60 || math.Abs(got-400/(200+200.0/30)) > 1e-9 {
		t.Errorf("bump: %v at %d", got, at)
	}
	if _, _, bins := burstiness(even[:50*120], origin, time.Second); bins != 0 {
		t.Errorf("under the floor: %d bins measured", bins)
	}
}

func TestWriteSectionKeepsTheHandWrittenText(t *testing.T) {
	p := filepath.Join(t.TempDir(), "B.md")
	if err := os.WriteFile(p, []byte("# Benchmarks\n\nanalysis\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"first", "second"} {
		if err := writeSection(p, beginMarker+"\n"+body+"\n"+endMarker+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(p)
	if s := string(b); !strings.HasPrefix(s, "# Benchmarks\n\nanalysis\n") || strings.Contains(s, "first") || strings.Count(s, beginMarker) != 1 || !strings.Contains(s, "second") {
		t.Errorf("file:\n%s", s)
	}
}

// TestPlotBesideTheOutput: the simulation part draws each seed-1 scenario
// next to the file it rewrites and links the drawing; with -out - it
// draws nothing.
func TestPlotBesideTheOutput(t *testing.T) {
	cfg, err := sim.DefaultConfig("herd", 200, 1)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var w bytes.Buffer
	if err := plot(&config{out: filepath.Join(dir, "BENCHMARKS.md")}, &w, rep); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "plots", "herd-200.svg"))
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Fatalf("no drawing: %v", err)
	}
	if !strings.Contains(w.String(), "(plots/herd-200.svg)") {
		t.Errorf("the section does not link the drawing:\n%s", w.String())
	}
	w.Reset()
	if err := plot(&config{out: "-"}, &w, rep); err != nil || w.Len() != 0 {
		t.Errorf("-out -: %v, %q", err, w.String())
	}
}

// TestBenchContractsParse: the contracts the bench hands to a daemon are
// valid, with the limits each part relies on.
func TestBenchContractsParse(t *testing.T) {
	for yaml, want := range map[string]int{burnContract("127.0.0.1:1"): 10, waitingContract("127.0.0.1:1"): 100000} {
		c, err := contract.Parse([]byte(yaml))
		if err != nil {
			t.Fatalf("%v\n%s", err, yaml)
		}
		if c.Limits.MaxStatusRequests != want {
			t.Errorf("%s: max_status_requests %d, want %d", c.Name, c.Limits.MaxStatusRequests, want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 100000: "100,000", 1000000: "1,000,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestProviderCountsAndAnswers(t *testing.T) {
	p, err := startProvider(answerSucceeded)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	for range 2 {
		resp, err := http.Get("http://" + p.addr + "/v1/jobs/7")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := `{"state":"succeeded","result":{"url":"https://results.example.com/v1/jobs/7"}}`; string(body) != want {
			t.Fatalf("body %s, want %s", body, want)
		}
	}
	if n := p.served.Load(); n != 2 || p.last.Load() == 0 {
		t.Fatalf("served %d, last %d: want 2 and a time", n, p.last.Load())
	}
}

// TestCapacityFromCPU: N replicas on machines of their own do N times one
// replica's steps until the server's CPU per step bounds them.
func TestCapacityFromCPU(t *testing.T) {
	var w bytes.Buffer
	writeCapacity(&w, map[string][2]time.Duration{"postgres/1": {400 * time.Microsecond, 100 * time.Microsecond}})
	// One replica: 2 cores ÷ 400 µs = 5,000/s; the server: 2 ÷ 100 µs = 20,000/s.
	for _, want := range []string{"| 400 µs | 100 µs | 5000 | 10000 | 15000 | 20000 (server) | 20000 (server) |"} {
		if !strings.Contains(w.String(), want) {
			t.Fatalf("capacity table lacks %q:\n%s", want, w.String())
		}
	}
	w.Reset()
	writeCapacity(&w, map[string][2]time.Duration{"postgres/1": {400 * time.Microsecond, 0}})
	if w.Len() != 0 {
		t.Fatalf("a table without the server's CPU:\n%s", w.String())
	}
}
