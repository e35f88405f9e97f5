package policy

import "github.com/pollwarden/pollwarden"

// resetTransportFailures applies limits.transport_failures: consecutive:
// an answer whose state was read shows the provider working again, so
// the failures before it stop counting. Under the default (total) every
// failure of the operation counts, as the budget was written: a provider
// that fails now and then over a long job is worth a person's look.
func resetTransportFailures(op *pollwarden.Operation, c *pollwarden.ContractSpec) {
	if c.Limits.ConsecutiveTransportFailures {
		op.TransportFailuresUsed = 0
	}
}
