package controller

import (
	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/prober"
)

// Observe is the reduction a step applies to an answer, exported so
// `contract test` reads a saved answer exactly as a live one is read.
func Observe(ex *contract.Loaded, r prober.Response) *pollwarden.Observation {
	return observe(ex, r)
}
