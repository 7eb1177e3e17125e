//phalanx:deterministic

// Package allow exercises //phalanx:allow.
package allow

import "time"

func Suppressed(m map[string]int, a, b float64) int {
	n := 0
	//phalanx:allow maprange the sum does not depend on order
	for _, v := range m {
		n += v
	}
	for _, v := range m { //phalanx:allow maprange the sum does not depend on order
		n += v
	}
	//phalanx:allow float,clock display only, never fed back into the state
	_ = float64(time.Now().Unix()) * a
	//phalanx:allow float only the float finding is suppressed here
	_ = a * float64(time.Since(time.Time{})) // want `time.Since reads the real clock`
	//phalanx:allow float reaches one line only

	_ = a * b             // want `float arithmetic`
	for _, v := range m { // want `range over map`
		n += v
	}
	return n
}

func Malformed(a, b float64) float64 {
	//phalanx:allow float // want `malformed //phalanx:allow`
	x := a * b // want `float arithmetic`
	//phalanx:allow floats misspelt rule name // want `unknown rule "floats"`
	x = a * b // want `float arithmetic`
	return x
}
