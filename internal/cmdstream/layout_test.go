package cmdstream

import (
	"testing"
	"unsafe"
)

// A Stream is 128 bytes, so that the allocator places it at a multiple
// of 128, and what every datagram reads (base, seal, held, the length of
// pending) lies in its first cache line.
func TestStreamLayout(t *testing.T) {
	var s Stream
	if n := unsafe.Sizeof(s); n != 128 {
		t.Errorf("a Stream is %d bytes, want 128", n)
	}
	if end := unsafe.Offsetof(s.pending) + 16; end > 64 {
		t.Errorf("the length of pending ends at byte %d, past the first cache line", end)
	}
}
