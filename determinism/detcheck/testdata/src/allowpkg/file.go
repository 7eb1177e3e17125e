// A file header: the allow comment below covers this file only.

//phalanx:allow clock this file only times the frame for the overlay

package allowpkg

import "time"

type Overlay struct {
	X     float64
	Taken time.Duration
}

func Frame(o *Overlay, start time.Time) {
	o.X = o.X*0.9 + 0.1
	o.Taken = time.Since(start)
}
