// Package allow exercises //phalanx:allow on a line, a function and a
// declaration, and malformed allow comments.
//
//phalanx:deterministic
package allow

import "time"

type World struct {
	X    float64
	Seen int64
	Log  []string
}

func Lines(w *World, m map[string]int, a float64) {
	//phalanx:allow maprange the log is display only
	for k := range m {
		w.Log = append(w.Log, k)
	}
	for k := range m { //phalanx:allow maprange the log is display only
		w.Log = append(w.Log, k)
	}
	//phalanx:allow float,clock display only, never fed back into the state
	w.X = float64(time.Now().Unix()) * a
	//phalanx:allow float only the float finding is allowed here
	w.X = a * float64(time.Since(time.Time{})) // want `time.Since reads the real clock.*\[clock\]`
	//phalanx:allow float reaches one line only // want `//phalanx:allow float allows nothing here.*\[directive\]`

	w.X = a * 2        // want `float computation \(\*\) is stored in w.X.*\[float\]`
	for k := range m { // want `range over map.*\[maprange\]`
		w.Log = append(w.Log, k)
	}
}

// Debug is allowed as a whole.
//
//phalanx:allow clock,float debug output, never part of the state
func Debug(w *World) {
	w.Seen = time.Now().UnixNano()
	w.X = w.X * 1.5
}

//phalanx:allow maprange the table is read for display only
var table = func(m map[string]int, w *World) int {
	for k := range m {
		w.Log = append(w.Log, k)
	}
	return len(m)
}

// Unused allows what needs no allowing.
func Unused(m map[string]int) int {
	n := 0
	//phalanx:allow maprange,clock summing commutes // want `//phalanx:allow maprange allows nothing here` `//phalanx:allow clock allows nothing here`
	for _, v := range m {
		n += v
	}
	return n
}

func Malformed(w *World, a float64) {
	//phalanx:allow float // want `malformed //phalanx:allow: want "//phalanx:allow RULE reason" with a non-empty reason \[directive\]`
	w.X = a * a // want `float computation`
	//phalanx:allow floats misspelt rule name // want `//phalanx:allow names unknown rule "floats".*\[directive\]`
	w.X = a * a // want `float computation`
	// phalanx:allow float with a space // want `misspelled directive "// phalanx:allow": write //phalanx:allow RULE reason.*\[directive\]`
	w.X = a * a // want `float computation`
}

//phalanx:deterministic // want `misplaced //phalanx:deterministic: it marks a package only in a comment above the package clause.*\[directive\]`
func Misplaced() {}
