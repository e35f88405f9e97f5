package cli

import "runtime/debug"

// serveGCPercent is the daemon's garbage-collection target when the
// operator sets no GOGC: its live heap is small (37 MiB resident with a
// million waiting operations), while at Go's default of 100 the collector
// took a quarter of its CPU under a burst of creates, competing with the
// single SQLite writer every create and step waits for
// (docs/decisions.md, "API creates while polling").
const serveGCPercent = 200

// serveGC sets the collector's target for serve's lifetime and returns
// what undoes it; GOGC in the environment, as the operator's choice, is
// left alone.
func serveGC(getenv func(string) (string, bool)) (undo func()) {
	pct, ok := serveGCTarget(getenv)
	if !ok {
		return func() {}
	}
	prev := debug.SetGCPercent(pct)
	return func() { debug.SetGCPercent(prev) }
}

// serveGCTarget is the GC percent serve sets, or false when GOGC is set.
func serveGCTarget(getenv func(string) (string, bool)) (int, bool) {
	if getenv != nil {
		if v, set := getenv("GOGC"); set && v != "" {
			return 0, false
		}
	}
	return serveGCPercent, true
}
