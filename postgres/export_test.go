package postgres

// CallerClock returns o with lease decisions on the caller's Now, for the
// conformance suite, which moves time by hand; only tests can set it.
func CallerClock(o Options) Options {
	o.callerClock = true
	return o
}
