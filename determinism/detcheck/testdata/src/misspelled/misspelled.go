// Package misspelled means to be marked, but the directive has a space:
// the package is not checked, and the directive is reported.
//
// phalanx:deterministic // want `misspelled directive "// phalanx:deterministic.*the package is not marked \[directive\]`
package misspelled

import "time"

func Now() time.Time { return time.Now() } // want Now:`clock: via misspelled.Now: time.Now`

//phalanx:determinstic // want `misspelled directive "//phalanx:determinstic": write //phalanx:deterministic`
var x = 1
