// Package builtin holds the contracts pollwarden ships for real providers,
// embedded in the binary so that a user starts from a tested contract
// rather than a blank file. It only stores their YAML text; package
// contract parses them (and resolves `extends: NAME` against them).
package builtin

import (
	"bufio"
	"bytes"
	"embed"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Info names one built-in contract and says in a line what it waits for.
type Info struct {
	Name        string
	Description string
}

// Source returns the YAML text of the built-in called name.
func Source(name string) ([]byte, bool) {
	if name == "" || strings.ContainsAny(name, `/\.`) {
		return nil, false
	}
	data, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return nil, false
	}
	return data, true
}

// List returns every built-in, sorted by name. The description is the
// file's first comment line, so it lives next to the contract it describes.
func List() []Info {
	entries, _ := fs.ReadDir(files, ".")
	out := make([]Info, 0, len(entries))
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), path.Ext(e.Name()))
		data, _ := files.ReadFile(e.Name())
		out = append(out, Info{Name: name, Description: description(data)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names returns the built-in names, sorted.
func Names() []string {
	list := List()
	out := make([]string, len(list))
	for i, in := range list {
		out[i] = in.Name
	}
	return out
}

// description is the text of the first "# " comment line.
func description(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "# "); ok {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
