// Package policy is the decision core of pollwarden: every rule of the
// specification that decides whether, when and why a status request goes
// out, and what an answer means. It does no I/O and reads no clock: each
// function takes the record, the observation, the time and a random source,
// and returns the next record with the events that explain it. The
// controller is the only caller that persists what these functions decide.
// HTTP reaches it as values (a status code, a raw Retry-After read by
// pollwarden.ParseRetryAfter); TestDependencies keeps os, net, net/http,
// database/sql and io/fs out of it.
package policy

import "math/rand/v2"

// Rand is the random source for jitter. *rand.Rand satisfies it; tests pass
// a seeded one so every decision is reproducible.
type Rand interface {
	Float64() float64
}

var _ Rand = (*rand.Rand)(nil)
