//go:build !race

package locksteptest

const raceEnabled = false
