package contract

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract/builtin"
)

// Set is the contracts of one directory, by name: what `pollwarden serve
// --contracts DIR` offers. It is safe for concurrent use: Reload swaps the
// whole set at once, so a request sees either the old set or the new one,
// never half of each.
type Set struct {
	dir string

	mu     sync.RWMutex
	byName map[string]*Loaded
	// builtins caches the built-ins asked for by name; they never change
	// while the process runs, so a reload keeps them.
	builtins map[string]*Loaded
}

// SetError is the error of a directory that cannot be loaded: every
// problem of every refused file, each *Problems naming its file, so an
// operator fixes them all in one pass.
type SetError struct {
	Dir   string
	Files []*Problems
}

// Error prints every problem of every file, one per line.
func (e *SetError) Error() string {
	parts := make([]string, 0, len(e.Files))
	for _, p := range e.Files {
		parts = append(parts, p.Error())
	}
	return strings.Join(parts, "\n")
}

// Unwrap exposes each file's *Problems, so errors.Is(err,
// pollwarden.ErrInvalid) and errors.As(err, **Problems) hold.
func (e *SetError) Unwrap() []error {
	out := make([]error, len(e.Files))
	for i, p := range e.Files {
		out[i] = p
	}
	return out
}

// LoadDir reads every *.yaml file of dir as a contract, keyed by its name.
// Hidden files (editor backups, lock files) are skipped. A file that does
// not parse, two files with one name, or a directory without any contract
// is refused with every problem listed (a *SetError).
func LoadDir(dir string) (*Set, error) {
	byName, err := loadDir(dir)
	if err != nil {
		return nil, err
	}
	return &Set{dir: dir, byName: byName}, nil
}

// Reload re-reads the directory (the daemon's SIGHUP). On any error the
// set in use is kept unchanged and the error says why, so a bad edit never
// takes contracts away from running operations.
func (s *Set) Reload() error {
	byName, err := loadDir(s.dir)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.byName = byName
	s.mu.Unlock()
	return nil
}

// Get returns the compiled contract called name: a loaded file of that
// name, else the built-in of that name.
func (s *Set) Get(name string) (*Loaded, bool) {
	s.mu.RLock()
	ex, ok := s.byName[name]
	if !ok {
		ex, ok = s.builtins[name]
	}
	s.mu.RUnlock()
	if ok {
		return ex, true
	}
	ex, err := Builtin(name)
	if err != nil {
		return nil, false
	}
	s.mu.Lock()
	if s.builtins == nil {
		s.builtins = map[string]*Loaded{}
	}
	s.builtins[name] = ex
	s.mu.Unlock()
	return ex, true
}

// Names returns the contract names, sorted.
func (s *Set) Names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.byName))
	for n := range s.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Dir is the directory the set is read from.
func (s *Set) Dir() string { return s.dir }

// NewSet builds a set from compiled contracts, for tests and embedders that
// do not read a directory. Reload on such a set fails. Two contracts with
// one name are refused.
func NewSet(exs ...*Loaded) (*Set, error) {
	byName := make(map[string]*Loaded, len(exs))
	for _, ex := range exs {
		name := ex.Spec().Name
		if _, dup := byName[name]; dup {
			return nil, pollwarden.Refuse(pollwarden.ErrInvalid, "", "two contracts named %q", name)
		}
		byName[name] = ex
	}
	return &Set{byName: byName}, nil
}

func loadDir(dir string) (map[string]*Loaded, error) {
	if dir == "" {
		return nil, errors.New("contracts: no directory to read")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("contracts: %w", err)
	}
	byName := map[string]*Loaded{}
	firstFile := map[string]string{}
	var bad []*Problems
	var paths []string
	texts := map[string][]byte{}    // path -> text
	byContract := map[string]Base{} // contract name -> first file with it
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".yaml") || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		if info, err := os.Stat(path); err != nil || info.IsDir() {
			if err != nil {
				bad = append(bad, &Problems{File: path, List: []Problem{{Msg: err.Error()}}})
			}
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			bad = append(bad, &Problems{File: path, List: []Problem{{Msg: err.Error()}}})
			continue
		}
		paths = append(paths, path)
		texts[path] = data
		if root, probs := document(data); len(probs) == 0 {
			if n := topName(root); validName(n) {
				if _, dup := byContract[n]; !dup {
					byContract[n] = Base{Source: path, Data: data}
				}
			}
		}
	}
	loaded := BaseLookup(func(name string, skip func(string) bool) (Base, bool) {
		b, ok := byContract[name]
		if !ok || skip(b.Source) {
			return Base{}, false
		}
		return b, true
	})
	lookup := loaded.Then(Builtins)
	for _, path := range paths {
		ex, line, err := compileFile(path, texts[path], lookup)
		if err != nil {
			bad = append(bad, asProblems(path, err))
			continue
		}
		cname := ex.Spec().Name
		if prev, dup := firstFile[cname]; dup {
			bad = append(bad, &Problems{File: path, List: []Problem{{Line: line, Path: "name",
				Msg: fmt.Sprintf("contract name %q is already used by %s; names must be unique in a directory", cname, prev)}}})
			continue
		}
		firstFile[cname] = path
		byName[cname] = ex
	}
	if len(bad) > 0 {
		return nil, &SetError{Dir: dir, Files: bad}
	}
	if len(byName) == 0 {
		return nil, &SetError{Dir: dir, Files: []*Problems{{File: dir, List: []Problem{{Msg: "no *.yaml contract in this directory"}}}}}
	}
	return byName, nil
}

// compileFile parses and compiles one file's text, returning the line of
// its name key so a duplicate name can be pointed at.
func compileFile(path string, data []byte, lookup BaseLookup) (*Loaded, int, error) {
	c, err := ParseFrom(data, path, lookup)
	if err != nil {
		return nil, 0, err
	}
	ex, err := Compile(c)
	if err != nil {
		return nil, 0, err
	}
	return ex, nameLine(data), nil
}

// asProblems gives err the shape of a file's *Problems, naming the file.
func asProblems(path string, err error) *Problems {
	if ps, ok := errors.AsType[*Problems](err); ok {
		ps.File = path
		return ps
	}
	return &Problems{File: path, List: []Problem{{Msg: err.Error()}}}
}

// nameLine finds the line of the top-level name key; 0 if it cannot.
func nameLine(data []byte) int {
	var doc yaml.Node
	if yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return 0
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "name" {
			return root.Content[i].Line
		}
	}
	return 0
}

// Builtin parses and compiles the built-in contract called name.
func Builtin(name string) (*Loaded, error) {
	data, ok := builtin.Source(name)
	if !ok {
		return nil, refusef("no built-in contract %s (built-ins: %s)", clip(name), strings.Join(builtin.Names(), ", "))
	}
	c, err := ParseFrom(data, "builtin:"+name, Builtins)
	if err != nil {
		return nil, fmt.Errorf("built-in contract %s: %w", name, err)
	}
	return Compile(c)
}
