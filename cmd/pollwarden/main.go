// Command pollwarden waits on external asynchronous jobs under a bounded,
// audited contract. See the README and `pollwarden --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/pollwarden/pollwarden/cli"
)

// version is stamped at link time by a release build
// (-ldflags "-X main.version=v1.2.3", see the Makefile's dist target);
// empty otherwise, and then the build information tells the version.
var version string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := cli.OSEnv()
	env.Version = version
	code := cli.Main(ctx, os.Args[1:], env)
	stop()
	os.Exit(code)
}
