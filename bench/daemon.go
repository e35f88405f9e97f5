package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// benchToken is the bearer token of the daemons these benchmarks start;
// the tokens file holds only its hash.
const benchToken = "pollwarden-bench-agent-token"

// daemon is one `pollwarden serve` process started by a benchmark.
type daemon struct {
	cmd  *exec.Cmd
	base string
	logf *os.File
	// exited is closed once the process has ended (its one Wait).
	exited chan struct{}
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startDaemon writes the contract and tokens files into dir and starts
// serve on a free loopback port with store, then waits for /healthz.
func startDaemon(ctx context.Context, c *config, dir, store, contractYAML string) (*daemon, time.Duration, error) {
	cdir := filepath.Join(dir, "contracts")
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		return nil, 0, err
	}
	if contractYAML != "" {
		if err := os.WriteFile(filepath.Join(cdir, "bench.yaml"), []byte(contractYAML), 0o644); err != nil {
			return nil, 0, err
		}
	}
	sum := sha256.Sum256([]byte(benchToken))
	tokens := fmt.Sprintf("tokens:\n  - {name: bench, role: agent, sha256: %q}\n", hex.EncodeToString(sum[:]))
	tf := filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(tf, []byte(tokens), 0o600); err != nil {
		return nil, 0, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, 0, err
	}
	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, 0, err
	}
	args := []string{"serve", "--listen", addr, "--store", store, "--contracts", cdir, "--tokens", tf}
	args = append(args, strings.Fields(c.serveFlags)...)
	if c.profiles != "" {
		c.started++
		rel, err := filepath.Rel(c.tmp, dir)
		if err != nil {
			rel = filepath.Base(dir)
		}
		name := fmt.Sprintf("%02d-%s.prof", c.started, strings.ReplaceAll(rel, string(filepath.Separator), "-"))
		args = append(args, "--cpu-profile", filepath.Join(c.profiles, name))
	}
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	d := &daemon{cmd: cmd, base: "http://" + addr, logf: logFile, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.exited) }()
	for {
		resp, err := http.Get(d.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return d, time.Since(t0), nil
			}
		}
		select {
		case <-d.exited:
			// A daemon that refused its flags or its store says why in its log.
			logFile.Close()
			return nil, 0, fmt.Errorf("serve exited before answering /healthz (%s; log %s)", cmd.ProcessState, logFile.Name())
		default:
		}
		if time.Since(t0) > 10*time.Minute {
			d.stop()
			return nil, 0, fmt.Errorf("serve did not answer /healthz within 10 minutes (log %s)", logFile.Name())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM (serve finishes its in-flight requests) and waits.
func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	d.logf.Close()
}

// cpuTicks is the daemon's user+system CPU time so far, in clock ticks
// (USER_HZ, 100 a second on Linux), or −1 when /proc cannot say.
func (d *daemon) cpuTicks() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	// Fields after the command name's closing parenthesis: utime and
	// stime are the 14th and 15th of the whole line (proc(5)).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return u + s
}

// rssKiB reads the resident set size of the daemon from /proc.
func (d *daemon) rssKiB() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			return strconv.ParseInt(strings.Fields(l)[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS")
}

// post sends one authenticated JSON request to the daemon.
func (d *daemon) post(client *http.Client, path string, body any) (int, []byte, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, d.base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+benchToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out, nil
}

// metric reads one sample of the daemon's /metrics by its exact name and
// labels text (e.g. `x_bucket{le="0.1"}`); ok is false when absent.
func (d *daemon) metrics() (map[string]float64, error) {
	resp, err := http.Get(d.base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err == nil {
			out[l[:i]] = v
		}
	}
	return out, nil
}

// histogramQuantile estimates quantile q of a Prometheus histogram from
// its cumulative buckets (the upper bound of the bucket that holds it).
func histogramQuantile(m map[string]float64, name string, q float64) (float64, float64) {
	type bucket struct{ le, n float64 }
	var bs []bucket
	for k, v := range m {
		if !strings.HasPrefix(k, name+"_bucket{") {
			continue
		}
		i := strings.Index(k, `le="`)
		if i < 0 {
			continue
		}
		s := k[i+4:]
		s = s[:strings.IndexByte(s, '"')]
		le, err := strconv.ParseFloat(s, 64)
		if s == "+Inf" {
			le, err = 1e308, nil
		}
		if err == nil {
			bs = append(bs, bucket{le, v})
		}
	}
	total := m[name+"_count"]
	if total == 0 {
		return 0, 0
	}
	best := 1e308
	for _, b := range bs {
		if b.n >= q*total && b.le < best {
			best = b.le
		}
	}
	return best, total
}
