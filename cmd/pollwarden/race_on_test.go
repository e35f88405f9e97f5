//go:build race

package main

// raceEnabled: the race detector slows every process several times over,
// and the process tests' status timeouts (1 s) are then close calls when
// several run at once; under -race they run one at a time unless
// -parallel says otherwise.
const raceEnabled = true
