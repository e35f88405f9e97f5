//go:build !race

package policy

const raceOn = false
