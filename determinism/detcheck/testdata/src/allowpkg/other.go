package allowpkg

import "time"

func Stamp(o *Overlay) {
	o.X = o.X / 2
	o.Taken = time.Duration(time.Now().Unix()) // want `time.Now reads the real clock.*\[clock\]`
}
