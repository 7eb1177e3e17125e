package delay

import "github.com/phalanx-net/phalanx/bucket"

// Frame is bucket's, named here as the package's own.
type Frame = bucket.Frame
