//go:build race

package locksteptest

// raceEnabled says the tests run under the race detector, which slows this
// package's runs about tenfold: the longest tests then check fewer cases.
const raceEnabled = true
