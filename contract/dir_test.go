package contract

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/pollwarden/pollwarden"
)

func miniContract(name string) string {
	return `version: 1
name: ` + name + `
status: {url: "https://api.example.com/jobs/{job_id}"}
state: {path: state, pending: [running], success: [done]}
`
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"b.yaml":       miniContract("beta"),
		"a.yaml":       miniContract("alpha"),
		"notes.txt":    "not a contract",
		".a.yaml.swp":  "junk",
		".hidden.yaml": "junk: [",
	})
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Names(); !reflect.DeepEqual(got, []string{"alpha", "beta"}) {
		t.Fatalf("Names = %v", got)
	}
	ex, ok := s.Get("beta")
	if !ok || ex.Spec().Name != "beta" {
		t.Fatalf("Get(beta) = %v, %v", ex, ok)
	}
	if _, ok := s.Get("a"); ok {
		t.Fatal("a contract is found by its file name; it must be by its name")
	}
}

func TestLoadDirListsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.yaml":   miniContract("same"),
		"b.yaml":   "version: 1\n" + strings.TrimPrefix(miniContract("same"), "version: 1\n"),
		"bad.yaml": miniContract("ok") + "colour: blue\n",
		"two.yaml": "version: 2\n" + strings.TrimPrefix(miniContract("Bad_Name"), "version: 1\n"),
	})
	_, err := LoadDir(dir)
	var se *SetError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *SetError", err)
	}
	if !errors.Is(err, pollwarden.ErrInvalid) {
		t.Fatal("a bad directory is not ErrInvalid")
	}
	msg := err.Error()
	for _, want := range []string{
		filepath.Join(dir, "b.yaml") + `: line 2: name: contract name "same" is already used by ` + filepath.Join(dir, "a.yaml"),
		filepath.Join(dir, "bad.yaml") + ": line 5: colour: unknown key",
		filepath.Join(dir, "two.yaml") + ": line 1: version",
		filepath.Join(dir, "two.yaml") + ": line 2: name",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}

func TestLoadDirEmptyOrMissing(t *testing.T) {
	if _, err := LoadDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no *.yaml contract") {
		t.Fatalf("empty dir: err = %v", err)
	}
	if _, err := LoadDir(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Fatal("missing dir accepted")
	}
}

func TestReloadKeepsOldSetOnError(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.yaml": miniContract("alpha")})
	s, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"b.yaml": miniContract("beta"), "c.yaml": "version: 1\nname: [\n"})
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "c.yaml") {
		t.Fatalf("Reload with a bad file: err = %v", err)
	}
	if got := s.Names(); !reflect.DeepEqual(got, []string{"alpha"}) {
		t.Fatalf("after a failed reload Names = %v, want the old set", got)
	}
	if err := os.Remove(filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := s.Names(); !reflect.DeepEqual(got, []string{"beta"}) {
		t.Fatalf("after a good reload Names = %v", got)
	}
}

func TestSetConcurrentReload(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.yaml": miniContract("alpha")})
	s, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if _, ok := s.Get("alpha"); !ok {
					t.Error("alpha vanished during a reload")
					return
				}
				_ = s.Names()
			}
		})
	}
	for range 10 {
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

func TestNewSet(t *testing.T) {
	c, err := Parse([]byte(miniContract("alpha")))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(ex)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get("alpha"); !ok {
		t.Fatal("alpha missing")
	}
	if _, err := NewSet(ex, ex); err == nil {
		t.Fatal("duplicate names accepted")
	}
	if err := s.Reload(); err == nil {
		t.Fatal("Reload of a set without a directory succeeded")
	}
}
