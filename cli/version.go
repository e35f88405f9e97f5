package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// resolveVersion is the version a binary reports: the one stamped at link
// time (-ldflags "-X main.version=v1.2.3", as `make dist` does) when there
// is one, else the module version `go install …@v1.2.3` records, else
// "devel" with the commit the toolchain recorded, so that a bug report
// names the code it came from however the binary was built.
func resolveVersion(stamped string) string {
	if stamped != "" {
		return stamped
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	v := "devel " + rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	if at != "" {
		v += " " + at
	}
	return v
}

// versionLine is what `pollwarden --version` and `pollwarden version`
// print: the version and the toolchain and platform it was built for.
func (env Env) versionLine() string {
	goVersion := "unknown Go"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
	}
	return fmt.Sprintf("pollwarden %s (%s)", strings.TrimSpace(resolveVersion(env.Version)), goVersion+" "+runtime.GOOS+"/"+runtime.GOARCH)
}

func versionCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(env.Stdout, env.versionLine())
			return err
		},
	}
}
