// Package delay holds the lockstep engine's adaptive delay policy: sliding
// windows of measured durations ([Samples]), the lead a member keeps between
// its frame clock and the frames it stamps ([Lead], [LeadPolicy]), and the
// frame a command submitted at a given moment is stamped with ([StampFrame]).
//
// Nothing here does I/O, reads a clock or starts a goroutine: time is an
// argument.
package delay
