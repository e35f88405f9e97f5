//go:build race

package policy

// raceOn: the race detector changes what allocates.
const raceOn = true
