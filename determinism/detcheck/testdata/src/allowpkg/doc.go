// Package allowpkg allows the float rule for the whole package in its
// doc comment.
//
//phalanx:deterministic
//phalanx:allow float a display package: its floats never reach the state
package allowpkg
