package lockstep

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
)

// A second copy is the seal and Next of a datagram that moved them on,
// sent within twice SealRepeat and before a repeat would be: it marks the
// path lossy; a datagram soon after one without news, or later than a
// copy would be, does not. A SealRepeat of half MinInterval or more is
// still told from a repeat.
func TestCopySeen(t *testing.T) {
	ms := time.Millisecond
	type dgram struct {
		seal bucket.Frame
		next uint32
		sent time.Duration
	}
	for _, tc := range []struct {
		name   string
		repeat time.Duration
		sends  []dgram
		lossy  bool
	}{
		{"copy", 0, []dgram{{4, 0, 100 * ms}, {5, 0, 150 * ms}, {5, 0, 155 * ms}}, true},
		{"long repeat", 30 * ms, []dgram{{4, 0, 100 * ms}, {5, 0, 150 * ms}, {5, 0, 180 * ms}}, true},
		{"after no news", 0, []dgram{{5, 0, 100 * ms}, {5, 0, 150 * ms}, {5, 0, 155 * ms}}, false},
		{"too late", 0, []dgram{{4, 0, 100 * ms}, {5, 1, 150 * ms}, {5, 1, 170 * ms}}, false},
		{"repeat", 30 * ms, []dgram{{4, 0, 100 * ms}, {5, 0, 150 * ms}, {5, 0, 200 * ms}}, false},
	} {
		c, err := NewCore(Config{Members: 2, Self: 0, SealRepeat: tc.repeat}, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := c.peers[1]
		for i, d := range tc.sends {
			c.copySeen(d.sent, r, d.seal, d.next, d.sent, i == 0)
			r.newestSeal, r.newestNext = d.seal, d.next
		}
		if r.lossSeen != tc.lossy {
			t.Errorf("%s: lossy %v, want %v", tc.name, r.lossSeen, tc.lossy)
		}
	}
}
