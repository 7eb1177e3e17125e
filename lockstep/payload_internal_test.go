package lockstep

import (
	"bytes"
	"testing"
)

// The copies keepPayload cuts from one block are separate: each ends where
// its capacity does, so appending to one never reaches the next, and a
// full block gives way to a new one without touching the copies made.
func TestKeepPayloadCopiesStaySeparate(t *testing.T) {
	var c Core
	if c.keepPayload(nil) != nil || c.keepPayload([]byte{}) != nil {
		t.Error("an empty payload is kept as something")
	}
	src := []byte("move unit 17 to (1024, 768)")
	var kept [][]byte
	for i := range 2 * payloadSlab / len(src) {
		src[0] = byte(i)
		k := c.keepPayload(src)
		if cap(k) != len(k) || !bytes.Equal(k, src) {
			t.Fatalf("copy %d: %q, capacity %d", i, k, cap(k))
		}
		kept = append(kept, k)
	}
	_ = append(kept[0], "overwrite?"...)
	big := c.keepPayload(make([]byte, payloadSlab))
	for i, k := range kept {
		src[0] = byte(i)
		if !bytes.Equal(k, src) {
			t.Fatalf("copy %d changed to %q", i, k)
		}
	}
	if len(big) != payloadSlab {
		t.Errorf("a large payload kept as %d bytes", len(big))
	}
}
