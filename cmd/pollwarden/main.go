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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.OSEnv())
	stop()
	os.Exit(code)
}
