package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pollwarden/pollwarden"
	"golang.org/x/term"
)

// liveLine rewrites one terminal line while waiting. A nil *liveLine does
// nothing, so callers need no branches for --quiet or a non-terminal.
type liveLine struct {
	w    io.Writer
	now  func() time.Time
	last int
}

func (l *liveLine) update(op *pollwarden.Operation, next time.Time) {
	if l == nil {
		return
	}
	s := progressText(op, next, l.now())
	fmt.Fprintf(l.w, "\r%s", pad(s, l.last))
	l.last = len(s)
}

func (l *liveLine) clear() {
	if l == nil || l.last == 0 {
		return
	}
	fmt.Fprintf(l.w, "\r%s\r", pad("", l.last))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
