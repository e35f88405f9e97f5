package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/spf13/cobra"
)

// helpCites is what `--help` must not send a user to: a rule number, the
// specification the project was built from, or a path outside the
// repository.
var helpCites = regexp.MustCompile(`\bR(?:[1-9]|1[0-9]|2[0-7])\b|perf-anchors|SPEC\.md|the specification's|\.\./shared|/work/`)

// docPath finds the repository files a help text names.
var docPath = regexp.MustCompile(`\b(?:docs|cli|contract|sqlite|postgres)/[\w./-]+\.(?:md|yaml|sql|png)\b`)

// TestHelpTextsExplainInWords renders the --help of every command as a
// user sees it: none cites a rule number or a document that is not in the
// repository, and every repository file it names exists.
func TestHelpTextsExplainInWords(t *testing.T) {
	root := newRoot(t.Context(), Env{Stdout: new(bytes.Buffer), Stderr: new(bytes.Buffer)})
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		var b bytes.Buffer
		c.SetOut(&b)
		c.SetErr(&b)
		if err := c.Help(); err != nil {
			t.Fatalf("%s --help: %v", c.CommandPath(), err)
		}
		help := b.String()
		n++
		if m := helpCites.FindString(help); m != "" {
			t.Errorf("%s --help cites %q", c.CommandPath(), m)
		}
		for _, p := range docPath.FindAllString(help, -1) {
			if _, err := os.Stat(filepath.Join("..", p)); err != nil {
				t.Errorf("%s --help names %s, which is not in the repository", c.CommandPath(), p)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if n < 20 {
		t.Fatalf("only %d commands' help rendered", n)
	}
}
