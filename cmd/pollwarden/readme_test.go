package main

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// readmeBlocks returns the README's shell blocks marked for this test
// (an HTML comment `<!-- readme-test -->` on the line before the fence),
// and every other sh block, in order.
func readmeBlocks(t *testing.T) (marked, others []string) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var block []string
	in, mark, prevMarker := false, false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && line == "```sh":
			in, mark, block = true, prevMarker, nil
		case in && line == "```":
			in = false
			if mark {
				marked = append(marked, strings.Join(block, "\n"))
			} else {
				others = append(others, strings.Join(block, "\n"))
			}
		case in:
			block = append(block, line)
		}
		prevMarker = strings.TrimSpace(line) == "<!-- readme-test -->"
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return marked, others
}

// TestReadmeFirstWait runs the README's newcomer commands as written,
// with a freshly built binary on PATH, in an empty directory, against a
// local stand-in for the provider that serves the very file the README's
// stand-in serves, at the path it serves it. What the README says the
// commands print, they must print.
func TestReadmeFirstWait(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	marked, others := readmeBlocks(t)
	if len(marked) == 0 {
		t.Fatal("no README block is marked <!-- readme-test -->")
	}
	// The README's stand-in: which file it copies where.
	var src, dst string
	for _, b := range others {
		if m := regexp.MustCompile(`(?m)^cp (\S+) fake(/\S+)$`).FindStringSubmatch(b); m != nil && strings.Contains(b, "http.server") {
			src, dst = m[1], m[2]
		}
	}
	if src == "" {
		t.Fatal("the README's stand-in block (cp FILE fake/PATH, python3 -m http.server) is gone")
	}
	body, err := os.ReadFile(filepath.Join("..", "..", src))
	if err != nil {
		t.Fatalf("the README's stand-in serves %s: %v", src, err)
	}
	const key = "sk-stand-in-not-a-real-key"
	var mu sync.Mutex
	var seen []string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path != dst {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	defer fake.Close()

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "pollwarden"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, block := range marked {
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + dir,
			"XDG_STATE_HOME=" + filepath.Join(dir, "state"), "FAKE=" + fake.URL, "LANG=C.UTF-8"}
		b, err := cmd.CombinedOutput()
		out.Write(b)
		if err != nil {
			t.Fatalf("README block failed: %v\n--- block\n%s\n--- output\n%s", err, block, b)
		}
	}
	got := out.String()
	for _, want := range []string{
		"openai-batch",
		"succeeded  operation first-wait  job batch_abc123  state completed  requests 1/120",
		`result: {"output_file_id":"file-cvaTdG"}`,
		"status request 1 of 120: state completed",
		"first-wait",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the README's commands did not print %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, key) {
		t.Errorf("the credential's secret was printed:\n%s", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "GET "+dst+" Bearer "+key {
		t.Errorf("the stand-in saw %q, want one GET %s with the README's key", seen, dst)
	}
	// What the README says wait prints is what it printed.
	readme, _ := os.ReadFile(filepath.Join("..", "..", "README.md"))
	flat := strings.Join(strings.Fields(string(readme)), " ")
	if !strings.Contains(flat, "`succeeded operation first-wait job batch_abc123 state completed requests 1/120`") {
		t.Errorf("the README no longer quotes the outcome line its commands print")
	}
	t.Run("with its own stand-in", func(t *testing.T) { readmeWithOwnStandIn(t, bin, others, marked) })
}

// readmeWithOwnStandIn runs the README's stand-in block itself (python3's
// http.server, moved to a free port) and then the first wait, as a reader
// pastes them: the wait must not race the stand-in's start, so its first
// status request is answered and the outcome is `requests 1/120`.
func readmeWithOwnStandIn(t *testing.T, bin string, others, marked []string) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the README's stand-in needs python3")
	}
	var standIn string
	for _, b := range others {
		if strings.Contains(b, "http.server") {
			standIn = b
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	if !strings.Contains(standIn, "18301") {
		t.Fatalf("the README's stand-in block no longer uses port 18301:\n%s", standIn)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	// The stand-in block copies from the repository's contract/ directory.
	if err := os.Symlink(filepath.Join(root, "contract"), filepath.Join(work, "contract")); err != nil {
		t.Fatal(err)
	}
	script := "trap 'kill $(jobs -p) 2>/dev/null' EXIT\n" + strings.ReplaceAll(standIn, "18301", port) + "\n" + strings.Join(marked, "\n")
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + dir,
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"), "LANG=C.UTF-8"}
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README blocks failed: %v\n--- script\n%s\n--- output\n%s", err, script, b)
	}
	for _, want := range []string{"succeeded  operation first-wait  job batch_abc123  state completed  requests 1/120",
		"status request 1 of 120: state completed"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the README's blocks, stand-in included, did not print %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "connection_refused") || strings.Contains(string(b), "transport failures 1/") {
		t.Errorf("the first status request found no stand-in listening:\n%s", b)
	}
}

// TestReadmeLinksResolve: every file the README links to or names under
// docs/ is in the repository.
func TestReadmeLinksResolve(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths := regexp.MustCompile(`\]\(([^)#]+)\)|\bdocs/[\w./-]+\.(?:md|png)\b`).FindAllStringSubmatch(string(readme), -1)
	if len(paths) < 10 {
		t.Fatalf("only %d links found", len(paths))
	}
	for _, m := range paths {
		p := m[1]
		if p == "" {
			p = m[0]
		}
		if strings.Contains(p, "://") {
			continue
		}
		if _, err := os.Stat(filepath.Join("..", "..", p)); err != nil {
			t.Errorf("the README names %s, which is not in the repository", p)
		}
	}
}
