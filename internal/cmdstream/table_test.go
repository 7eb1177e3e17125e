package cmdstream

import (
	"fmt"
	"slices"
	"testing"
)

func TestNewTable(t *testing.T) {
	for _, members := range []int{-1, 0, MaxMembers + 1, 1000} {
		t.Run(fmt.Sprintf("panics/%d", members), func(t *testing.T) {
			mustPanic(t, fmt.Sprintf("%d members", members), func() { NewTable(members, 0) })
		})
	}
	for _, members := range []int{1, 2, MaxMembers} {
		tab := NewTable(members, 3)
		if tab.Members() != members {
			t.Errorf("NewTable(%d).Members() = %d", members, tab.Members())
		}
		for i := range members {
			s := tab.Stream(Slot(i))
			if s.Slot() != Slot(i) || s.Seal() != 3 || s.Next() != 0 {
				t.Errorf("NewTable(%d).Stream(%d): slot %d seal %d next %d", members, i, s.Slot(), s.Seal(), s.Next())
			}
			if tab.Closed(Slot(i)) != NoFrame || tab.EffectiveSeal(Slot(i)) != 3 {
				t.Errorf("slot %d: Closed %d EffectiveSeal %d, want NoFrame 3", i, tab.Closed(Slot(i)), tab.EffectiveSeal(Slot(i)))
			}
		}
		if tab.MinSeal() != 3 || !tab.Ready(3) || tab.Ready(4) {
			t.Errorf("NewTable(%d, 3): MinSeal %d Ready(3) %v Ready(4) %v", members, tab.MinSeal(), tab.Ready(3), tab.Ready(4))
		}
	}
}

func TestTableReady(t *testing.T) {
	// Three members sealed at 5, 3 and 1.
	tab := NewTable(3, 1)
	tab.Stream(0).Promise(5, 0)
	tab.Stream(1).Promise(3, 0)
	if tab.MinSeal() != 1 {
		t.Fatalf("MinSeal() = %d, want 1", tab.MinSeal())
	}
	tests := []struct {
		frame       Frame
		wantReady   bool
		wantWaiting []Slot
	}{
		{-1, true, nil},
		{0, true, nil},
		{1, true, nil},
		{2, false, []Slot{2}},
		{3, false, []Slot{2}},
		{4, false, []Slot{1, 2}},
		{5, false, []Slot{1, 2}},
		{6, false, []Slot{0, 1, 2}},
	}
	for _, tt := range tests {
		if got := tab.Ready(tt.frame); got != tt.wantReady {
			t.Errorf("Ready(%d) = %v, want %v", tt.frame, got, tt.wantReady)
		}
		dst := []Slot{42}
		got := tab.Waiting(dst, tt.frame)
		if got[0] != 42 || !slices.Equal(got[1:], tt.wantWaiting) {
			t.Errorf("Waiting([42], %d) = %v, want [42] + %v", tt.frame, got, tt.wantWaiting)
		}
	}
	tab.Stream(2).Promise(9, 0)
	if tab.MinSeal() != 3 || !tab.Ready(3) || tab.Ready(4) {
		t.Errorf("after slot 2 seals 9: MinSeal %d, want 3", tab.MinSeal())
	}
}

func TestTableAppendBucket(t *testing.T) {
	// Three members; commands arrive interleaved across slots and frames,
	// some past a gap. Buckets come out by slot, then sequence.
	tab := NewTable(3, 0)
	arrivals := []Command{
		cmd(2, 0, 2), cmd(0, 1, 2), cmd(1, 0, 1), cmd(2, 2, 3), cmd(0, 0, 1),
		cmd(1, 1, 2), cmd(2, 1, 2), cmd(0, 2, 2), cmd(1, 2, 2), cmd(0, 3, 3),
		cmd(1, 3, 4), cmd(2, 3, 3),
	}
	for _, c := range arrivals {
		if ok, err := tab.Stream(c.Slot).Insert(c); !ok || err != nil {
			t.Fatalf("Insert(%+v): (%v, %v)", c, ok, err)
		}
	}
	for slot := range Slot(3) {
		tab.Stream(slot).Promise(5, tab.Stream(slot).Next())
	}
	tests := []struct {
		frame Frame
		want  []Command
	}{
		{0, nil},
		{1, []Command{cmd(0, 0, 1), cmd(1, 0, 1)}},
		{2, []Command{cmd(0, 1, 2), cmd(0, 2, 2), cmd(1, 1, 2), cmd(1, 2, 2), cmd(2, 0, 2), cmd(2, 1, 2)}},
		{3, []Command{cmd(0, 3, 3), cmd(2, 2, 3), cmd(2, 3, 3)}},
		{4, []Command{cmd(1, 3, 4)}},
		{5, nil},
	}
	for _, tt := range tests {
		if !tab.Ready(tt.frame) {
			t.Fatalf("Ready(%d) = false", tt.frame)
		}
		prefix := []Command{cmd(9, 9, 9)}
		got := tab.AppendBucket(prefix, tt.frame)
		if !sameCommands(got[:1], prefix) || !sameCommands(got[1:], tt.want) {
			t.Errorf("AppendBucket(%d) = %v, want [prefix] + %v", tt.frame, got, tt.want)
		}
	}
}

func TestTableClose(t *testing.T) {
	// Slot 1 leaves with last frame 4, holding commands stamped 3..6.
	setup := func() *Table {
		tab := NewTable(2, 0)
		for i, f := range []Frame{3, 4, 5, 6} {
			tab.Stream(1).Insert(cmd(1, uint32(i), f))
		}
		tab.Stream(0).Insert(cmd(0, 0, 5))
		tab.Stream(0).Promise(9, 1)
		tab.Close(1, 4)
		return tab
	}

	t.Run("commands after the last frame are excluded", func(t *testing.T) {
		tab := setup()
		tab.Stream(1).Promise(6, 4)
		for _, tt := range []struct {
			frame Frame
			want  []Command
		}{
			{3, []Command{cmd(1, 0, 3)}},
			{4, []Command{cmd(1, 1, 4)}},
			{5, []Command{cmd(0, 0, 5)}}, // slot 1's seq 2 at frame 5 left out
			{6, nil},
		} {
			if got := tab.AppendBucket(nil, tt.frame); !sameCommands(got, tt.want) {
				t.Errorf("AppendBucket(%d) = %v, want %v", tt.frame, got, tt.want)
			}
		}
	})

	t.Run("seal below the last frame still holds frames back", func(t *testing.T) {
		tab := setup()
		tab.Stream(1).Promise(2, 0)
		if got := tab.EffectiveSeal(1); got != 2 {
			t.Errorf("EffectiveSeal(1) = %d, want the stream seal 2", got)
		}
		if tab.MinSeal() != 2 || tab.Ready(3) {
			t.Errorf("MinSeal %d Ready(3) %v, want 2 false", tab.MinSeal(), tab.Ready(3))
		}
		if got := tab.Waiting(nil, 4); !slices.Equal(got, []Slot{1}) {
			t.Errorf("Waiting(4) = %v, want [1]", got)
		}
	})

	t.Run("sealed up to the last frame: no longer waits", func(t *testing.T) {
		for _, seal := range []Frame{4, 5, 100} {
			tab := setup()
			tab.Stream(1).Promise(seal, 4)
			if got := tab.EffectiveSeal(1); got != NoFrame {
				t.Errorf("seal %d: EffectiveSeal(1) = %d, want NoFrame", seal, got)
			}
			if tab.MinSeal() != 9 || !tab.Ready(9) || tab.Ready(10) {
				t.Errorf("seal %d: MinSeal %d, want slot 0's 9", seal, tab.MinSeal())
			}
			if got := tab.Waiting(nil, 50); !slices.Equal(got, []Slot{0}) {
				t.Errorf("seal %d: Waiting(50) = %v, want [0]", seal, got)
			}
		}
	})

	t.Run("Closed", func(t *testing.T) {
		tab := setup()
		if tab.Closed(1) != 4 || tab.Closed(0) != NoFrame {
			t.Errorf("Closed = %d, %d, want NoFrame, 4", tab.Closed(0), tab.Closed(1))
		}
	})

	t.Run("close again at the same frame", func(t *testing.T) {
		tab := setup()
		tab.Close(1, 4)
		if tab.Closed(1) != 4 {
			t.Errorf("Closed(1) = %d, want 4", tab.Closed(1))
		}
	})

	t.Run("close again earlier", func(t *testing.T) {
		tab := setup()
		tab.Close(1, 3)
		if tab.Closed(1) != 3 {
			t.Errorf("Closed(1) = %d, want 3", tab.Closed(1))
		}
	})

	t.Run("close again later panics", func(t *testing.T) {
		for _, last := range []Frame{5, NoFrame} {
			tab := setup()
			mustPanic(t, "slot 1 closed at 4", func() { tab.Close(1, last) })
			if tab.Closed(1) != 4 {
				t.Errorf("Closed(1) = %d after a refused Close, want 4", tab.Closed(1))
			}
		}
	})

	t.Run("every member closed and sealed", func(t *testing.T) {
		tab := setup()
		tab.Stream(1).Promise(4, 2)
		tab.Close(0, 9)
		if tab.MinSeal() != NoFrame || !tab.Ready(NoFrame) {
			t.Errorf("MinSeal() = %d, want NoFrame", tab.MinSeal())
		}
		if got := tab.Waiting(nil, NoFrame); len(got) != 0 {
			t.Errorf("Waiting(NoFrame) = %v, want none", got)
		}
	})

	t.Run("closed before its first frame", func(t *testing.T) {
		tab := NewTable(2, 2)
		tab.Close(1, -1)
		if tab.EffectiveSeal(1) != NoFrame || tab.MinSeal() != 2 {
			t.Errorf("EffectiveSeal(1) %d MinSeal %d, want NoFrame 2", tab.EffectiveSeal(1), tab.MinSeal())
		}
		tab.Stream(1).Insert(cmd(1, 0, 3))
		if got := tab.AppendBucket(nil, 3); len(got) != 0 {
			t.Errorf("AppendBucket(3) = %v, want none", got)
		}
	})
}

func TestWindowContains(t *testing.T) {
	tests := []struct {
		ahead, executed, frame Frame
		want                   bool
	}{
		{8, 10, 0, true},
		{8, 10, 10, true},
		{8, 10, 17, true},
		{8, 10, 18, true}, // the bound is inclusive
		{8, 10, 19, false},
		{8, -1, 7, true},
		{8, -1, 8, false},
		{1, 0, 1, true},
		{1, 0, 2, false},
	}
	for _, tt := range tests {
		w := Window{Ahead: tt.ahead}
		if got := w.Contains(tt.executed, tt.frame); got != tt.want {
			t.Errorf("Window{%d}.Contains(%d, %d) = %v, want %v", tt.ahead, tt.executed, tt.frame, got, tt.want)
		}
	}
}

// Changed names the streams whose prefix a command joined, Trim shortened
// or Reset emptied since ClearChanged, and no others: not a buffered
// command, a seal, a duplicate or a Trim that removes nothing; the table
// keeps every stream's first and last frames beside it.
func TestTableChanged(t *testing.T) {
	tb := NewTable(4, 0)
	if tb.Changed() != 0 {
		t.Fatalf("a new table: changed %b", tb.Changed())
	}
	steps := []struct {
		name string
		do   func()
		want uint64
	}{
		{"append", func() { tb.Stream(0).Append(Command{Slot: 0, Seq: 0, Frame: 1}) }, 1 << 0},
		{"insert", func() { _, _ = tb.Stream(2).Insert(Command{Slot: 2, Seq: 0, Frame: 1}) }, 1 << 2},
		{"duplicate", func() { _, _ = tb.Stream(2).Insert(Command{Slot: 2, Seq: 0, Frame: 1}) }, 0},
		{"buffered", func() { _, _ = tb.Stream(3).Insert(Command{Slot: 3, Seq: 1, Frame: 2}) }, 0},
		{"seal", func() { tb.Stream(1).Promise(5, 0) }, 0},
		{"gap filled", func() { _, _ = tb.Stream(3).Insert(Command{Slot: 3, Seq: 0, Frame: 1}) }, 1 << 3},
		{"trim nothing", func() { tb.Stream(2).Trim(0) }, 0},
		{"trim", func() { tb.Stream(2).Trim(1) }, 1 << 2},
		{"reset", func() { tb.Stream(1).Reset(0, -1) }, 1 << 1},
	}
	for _, s := range steps {
		tb.ClearChanged()
		s.do()
		if got := tb.Changed(); got != s.want {
			t.Errorf("%s: changed %b, want %b", s.name, got, s.want)
		}
		for i := range tb.Members() {
			if tb.lastFrames[i] != tb.Stream(Slot(i)).LastFrame() {
				t.Errorf("%s: slot %d's last frame %d beside the table, %d in its stream", s.name, i, tb.lastFrames[i], tb.Stream(Slot(i)).LastFrame())
			}
			first := NoFrame
			if held := tb.Stream(Slot(i)).Since(0); len(held) > 0 {
				first = held[0].Frame
			}
			if tb.FirstFrame(Slot(i)) != first {
				t.Errorf("%s: slot %d's first frame %d beside the table, %d in its stream", s.name, i, tb.FirstFrame(Slot(i)), first)
			}
		}
	}
}
