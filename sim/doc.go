// Package sim is a discrete-event simulation of many operations polled by
// one controller, on a virtual clock. It drives the real decision core
// (policy.Gate, policy.CountRequest, policy.Decide) side by side with the
// baseline schedules the specification names, against a simulated
// provider, and measures what a provider sees: status requests per job,
// detection lag, request rate and its bursts, requests sent inside a
// Retry-After window, and jobs stopped by a limit.
//
// Nothing here reads the wall clock or the global random source: a run is
// a pure function of its Config (seed included). Each strategy runs against
// its own copy of the provider, so strategies may run in parallel without
// changing any number.
//
// The package also holds a reimplementation of Marc Brooker's OCC
// contention model ("Exponential Backoff And Jitter", 2015), used to check
// the harness against published figures (see Brooker).
package sim
