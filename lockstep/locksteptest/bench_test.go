package locksteptest

import (
	"testing"

	"github.com/phalanx-net/phalanx/lockstep"
)

// BenchmarkMinuteOf8 runs one minute of play (1,200 frames) of 8 members
// with the null simulation on the broadband profile: the whole engine and
// the virtual network, without a game.
func BenchmarkMinuteOf8(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		runProfile(b, "broadband", 8, 1200, 1, lockstep.Config{})
	}
}

// BenchmarkTenSecondsOf64 is 64 members for 200 frames (10 s) on
// broadband: the virtual-time cost of a large session.
func BenchmarkTenSecondsOf64(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		runProfile(b, "broadband", 64, 200, 1, lockstep.Config{})
	}
}
