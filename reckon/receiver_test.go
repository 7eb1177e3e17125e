package reckon

import (
	"testing"
	"time"
)

func TestReceiverDropsOlderUpdates(t *testing.T) {
	tests := []struct {
		name string
		seqs []uint16
		used []bool
	}{
		{"in order", []uint16{5, 6, 7}, []bool{true, true, true}},
		{"duplicate", []uint16{5, 6, 6}, []bool{true, true, false}},
		{"late", []uint16{5, 8, 6, 7, 9}, []bool{true, true, false, false, true}},
		{"gap", []uint16{5, 900}, []bool{true, true}},
		{"across the wrap", []uint16{65534, 65535, 0, 1}, []bool{true, true, true, true}},
		{"late across the wrap", []uint16{65534, 1, 65535, 0, 2}, []bool{true, true, false, false, true}},
		{"first update is taken whatever its number", []uint16{40000, 40001}, []bool{true, true}},
		{"half the space ahead counts as older", []uint16{0, 1 << 15, 1<<15 - 1}, []bool{true, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReceiver[Vec2](Smoothing{Method: Snap})
			dropped := 0
			for i, seq := range tt.seqs {
				now := time.Duration(i) * time.Second
				shown := r.At(now)
				u := Update[Vec2]{Seq: seq, State: State2{Pos: Vec2{float64(seq), 0}, At: now}}
				if got := r.Receive(now, u); got != tt.used[i] {
					t.Fatalf("update %d (seq %d): used %v, want %v", i, seq, got, tt.used[i])
				}
				if tt.used[i] {
					if got := r.At(now).Pos.X; got != float64(seq) {
						t.Fatalf("update %d (seq %d) is not shown: %v", i, seq, got)
					}
				} else {
					dropped++
					if r.At(now) != shown {
						t.Fatalf("dropped update %d (seq %d) changed the display", i, seq)
					}
				}
			}
			if r.Dropped() != dropped {
				t.Errorf("Dropped() = %d, want %d", r.Dropped(), dropped)
			}
		})
	}
}

func TestNewer(t *testing.T) {
	for _, tt := range []struct {
		s, n uint16
		want bool
	}{
		{1, 0, true}, {0, 1, false}, {0, 0, false},
		{0, 0xFFFF, true}, {0xFFFF, 0, false},
		{0x7FFF, 0, true}, {0x8000, 0, false}, {0x8001, 0, false},
		{3, 0xFFFE, true}, {0xFFFE, 3, false},
	} {
		if got := newer(tt.s, tt.n); got != tt.want {
			t.Errorf("newer(%#x, %#x) = %v, want %v", tt.s, tt.n, got, tt.want)
		}
	}
}
