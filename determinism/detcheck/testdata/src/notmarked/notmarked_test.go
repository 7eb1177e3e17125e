//phalanx:deterministic

package notmarked

import "testing"

func TestNow(t *testing.T) {
	_ = Now()
}
