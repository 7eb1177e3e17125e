// Package notmarked is not marked: its directive has a suffix that makes it
// another word, and its test file's directive does not count.
//
//phalanx:deterministically
package notmarked

import "time"

func Now() time.Time {
	return time.Now()
}
