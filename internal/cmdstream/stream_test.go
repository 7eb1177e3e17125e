package cmdstream

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// cmd builds a command of slot with a payload derived from seq and frame, so
// two commands compare equal exactly when slot, seq and frame agree.
func cmd(slot Slot, seq uint32, frame Frame) Command {
	return Command{Slot: slot, Seq: seq, Frame: frame, Payload: fmt.Appendf(nil, "s%d/q%d/f%d", slot, seq, frame)}
}

// mustPanic runs f and fails the test unless it panics with a message
// containing want.
func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one containing %q", want)
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, want) {
			t.Fatalf("panic %q, want one containing %q", msg, want)
		}
	}()
	f()
}

// held returns every held command, oldest first, as a fresh slice.
func held(s *Stream) []Command { return slices.Clone(s.Since(0)) }

// sameCommands reports whether a and b hold the same commands, payloads
// compared by content.
func sameCommands(a, b []Command) bool {
	return slices.EqualFunc(a, b, func(x, y Command) bool {
		return x.Slot == y.Slot && x.Seq == y.Seq && x.Frame == y.Frame && string(x.Payload) == string(y.Payload)
	})
}

// streamState is everything observable about a Stream, for "changes
// nothing" checks.
type streamState struct {
	Seal      Frame
	Base      uint32
	Next      uint32
	LastFrame Frame
	Buffered  int
}

func stateOf(s *Stream) streamState {
	return streamState{s.Seal(), s.Base(), s.Next(), s.LastFrame(), s.Buffered()}
}

func TestNewStream(t *testing.T) {
	for _, seal := range []Frame{-1, 0, 3} {
		s := NewStream(7, seal)
		want := streamState{Seal: seal, Base: 0, Next: 0, LastFrame: -1, Buffered: 0}
		if got := stateOf(s); got != want {
			t.Errorf("NewStream(7, %d) = %+v, want %+v", seal, got, want)
		}
		if s.Slot() != 7 {
			t.Errorf("Slot() = %d, want 7", s.Slot())
		}
		if got := s.Since(0); got != nil {
			t.Errorf("Since(0) on empty stream = %v, want nil", got)
		}
		// The initial seal binds the very first command.
		if _, err := s.Insert(cmd(7, 0, seal)); !errors.Is(err, ErrUnderSeal) {
			t.Errorf("Insert at the initial seal %d: err = %v, want ErrUnderSeal", seal, err)
		}
		if ok, err := s.Insert(cmd(7, 0, seal+1)); !ok || err != nil {
			t.Errorf("Insert just past the initial seal: (%v, %v), want (true, nil)", ok, err)
		}
	}
}

func TestStreamAppend(t *testing.T) {
	s := NewStream(1, 2)
	frames := []Frame{3, 3, 5, 5, 5, 9}
	for i, f := range frames {
		s.Append(cmd(1, uint32(i), f))
		if s.LastFrame() != f || s.Next() != uint32(i+1) {
			t.Fatalf("after Append #%d: LastFrame %d Next %d, want %d %d", i, s.LastFrame(), s.Next(), f, i+1)
		}
	}
	got := held(s)
	for i, c := range got {
		if !sameCommands([]Command{c}, []Command{cmd(1, uint32(i), frames[i])}) {
			t.Errorf("held[%d] = %+v", i, c)
		}
	}
	// The holder's own seal moves by SetSeal; a command must then clear it.
	s.SetSeal(9)
	s.SetSeal(9) // not backwards: allowed
	if s.Seal() != 9 {
		t.Fatalf("Seal() = %d, want 9", s.Seal())
	}
	s.Append(cmd(1, 6, 10))
}

func TestStreamAppendPanics(t *testing.T) {
	// Each case starts from a stream of slot 1 sealed at 4 holding seq 0 at
	// frame 6 (so Next is 1 and LastFrame is 6).
	tests := []struct {
		name  string
		setup func(s *Stream)
		c     Command
		want  string
	}{
		{"wrong slot", nil, cmd(2, 1, 7), "slot 2 in stream of slot 1"},
		{"seq repeats", nil, cmd(1, 0, 7), "seq 0"},
		{"seq skips", nil, cmd(1, 2, 7), "seq 2"},
		{"frame at seal", nil, cmd(1, 1, 4), ErrUnderSeal.Error()},
		{"frame under seal", nil, cmd(1, 1, 1), ErrUnderSeal.Error()},
		{"frame decreases", nil, cmd(1, 1, 5), ErrFrameDecreases.Error()},
		{"frame at raised seal", func(s *Stream) { s.SetSeal(8) }, cmd(1, 1, 8), ErrUnderSeal.Error()},
		{
			"commands buffered past a gap",
			func(s *Stream) {
				if ok, err := s.Insert(cmd(1, 3, 9)); !ok || err != nil {
					t.Fatalf("Insert early: (%v, %v)", ok, err)
				}
			},
			cmd(1, 1, 7), "Append",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream(1, 4)
			s.Append(cmd(1, 0, 6))
			if tt.setup != nil {
				tt.setup(s)
			}
			before := stateOf(s)
			mustPanic(t, tt.want, func() { s.Append(tt.c) })
			if after := stateOf(s); after != before {
				t.Errorf("state changed by a panicking Append: %+v -> %+v", before, after)
			}
		})
	}
}

func TestStreamSetSealBackwardsPanics(t *testing.T) {
	s := NewStream(3, 5)
	mustPanic(t, "moved backwards from 5 to 4", func() { s.SetSeal(4) })
	if s.Seal() != 5 {
		t.Errorf("Seal() = %d after a refused SetSeal, want 5", s.Seal())
	}
}

func TestStreamInsert(t *testing.T) {
	// Each case starts from a stream of slot 2 sealed at 1 holding seq 0..2 at
	// frames 2, 3, 3 (Next 3, LastFrame 3), then inserts c.
	tests := []struct {
		name    string
		c       Command
		wantNew bool
		wantErr error // nil, a sentinel, or errAny for an error without sentinel
	}{
		{"next in order", cmd(2, 3, 3), true, nil},
		{"next in order, later frame", cmd(2, 3, 40), true, nil},
		{"duplicate of seq 0", cmd(2, 0, 2), false, nil},
		{"duplicate of seq 2", cmd(2, 2, 3), false, nil},
		{"resend of seq 1 with another frame", cmd(2, 1, 4), false, ErrConflict},
		{"resend of seq 1 with another payload", Command{Slot: 2, Seq: 1, Frame: 3, Payload: []byte("other")}, false, ErrConflict},
		{"next at the seal", cmd(2, 3, 1), false, ErrUnderSeal},
		{"next under the seal", cmd(2, 3, 0), false, ErrUnderSeal},
		{"next before the last frame", cmd(2, 3, 2), false, ErrFrameDecreases},
		{"past a gap", cmd(2, 5, 9), true, nil},
		{"at the buffering limit", cmd(2, 3+maxOutOfOrder, 9), true, nil},
		{"past the buffering limit", cmd(2, 3+maxOutOfOrder+1, 9), false, ErrTooFarAhead},
		{"wrong slot", cmd(3, 3, 5), false, errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream(2, 1)
			for i, f := range []Frame{2, 3, 3} {
				if ok, err := s.Insert(cmd(2, uint32(i), f)); !ok || err != nil {
					t.Fatalf("setup Insert seq %d: (%v, %v)", i, ok, err)
				}
			}
			before, beforeHeld := stateOf(s), held(s)
			ok, err := s.Insert(tt.c)
			if ok != tt.wantNew {
				t.Errorf("Insert(%+v) new = %v, want %v", tt.c, ok, tt.wantNew)
			}
			switch {
			case tt.wantErr == nil && err != nil:
				t.Errorf("Insert(%+v) err = %v, want nil", tt.c, err)
			case tt.wantErr == errAny && err == nil:
				t.Errorf("Insert(%+v) err = nil, want an error", tt.c)
			case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Errorf("Insert(%+v) err = %v, want %v", tt.c, err, tt.wantErr)
			}
			if err != nil || !ok {
				// Refused or duplicate: nothing changes.
				if after := stateOf(s); after != before {
					t.Errorf("state changed: %+v -> %+v", before, after)
				}
				if !sameCommands(held(s), beforeHeld) {
					t.Errorf("held commands changed: %v -> %v", beforeHeld, held(s))
				}
			}
		})
	}
}

// errAny stands for "some error, not a sentinel" in test tables.
var errAny = errors.New("any error")

func TestStreamInsertWrongSlotNamesBoth(t *testing.T) {
	s := NewStream(2, -1)
	_, err := s.Insert(cmd(5, 0, 0))
	if err == nil || !strings.Contains(err.Error(), "slot 5") || !strings.Contains(err.Error(), "slot 2") {
		t.Fatalf("err = %v, want one naming slot 5 and slot 2", err)
	}
	for _, sentinel := range []error{ErrUnderSeal, ErrFrameDecreases, ErrConflict, ErrTooFarAhead} {
		if errors.Is(err, sentinel) {
			t.Errorf("wrong-slot error matches %v", sentinel)
		}
	}
}

func TestStreamResendOfOldCommandUnderRaisedSeal(t *testing.T) {
	// A resend of a command already held is a duplicate even when the seal has
	// since passed its frame: the seal checks bind only the next command.
	s := NewStream(0, -1)
	s.Insert(cmd(0, 0, 2))
	s.Promise(10, 1)
	if ok, err := s.Insert(cmd(0, 0, 2)); ok || err != nil {
		t.Fatalf("resend under the seal: (%v, %v), want (false, nil)", ok, err)
	}
}

func TestStreamConflictOnceTrimmed(t *testing.T) {
	// ErrConflict is reported only while the command is still held; once
	// trimmed, a differing resend is indistinguishable from a duplicate and is
	// silently ignored.
	s := NewStream(0, -1)
	for i, f := range []Frame{1, 2, 3} {
		s.Insert(cmd(0, uint32(i), f))
	}
	liar := Command{Slot: 0, Seq: 1, Frame: 7, Payload: []byte("changed")}
	if _, err := s.Insert(liar); !errors.Is(err, ErrConflict) {
		t.Fatalf("while held: err = %v, want ErrConflict", err)
	}
	s.Trim(2)
	if ok, err := s.Insert(liar); ok || err != nil {
		t.Fatalf("once trimmed: (%v, %v), want (false, nil)", ok, err)
	}
	// A conflicting resend of a command still held past Base is caught.
	if _, err := s.Insert(Command{Slot: 0, Seq: 2, Frame: 3, Payload: []byte("changed")}); !errors.Is(err, ErrConflict) {
		t.Fatalf("seq 2 still held: err = %v, want ErrConflict", err)
	}
}

func TestStreamEarlyResendKeepsFirst(t *testing.T) {
	// A command buffered past a gap is not compared with its resends: the
	// first copy is kept and a differing one is reported as a duplicate.
	s := NewStream(0, -1)
	first := Command{Slot: 0, Seq: 1, Frame: 4, Payload: []byte("first")}
	second := Command{Slot: 0, Seq: 1, Frame: 5, Payload: []byte("second")}
	if ok, err := s.Insert(first); !ok || err != nil {
		t.Fatalf("first: (%v, %v)", ok, err)
	}
	if ok, err := s.Insert(second); ok || err != nil {
		t.Fatalf("differing resend while buffered: (%v, %v), want (false, nil)", ok, err)
	}
	s.Insert(cmd(0, 0, 1))
	if got := held(s); len(got) != 2 || string(got[1].Payload) != "first" {
		t.Fatalf("held = %v, want seq 1 to be the first copy", got)
	}
}

func TestStreamReorder(t *testing.T) {
	// Deliveries in a fixed scrambled order with duplicates; after each one
	// the prefix length and the number buffered are as listed.
	frames := []Frame{1, 1, 2, 4, 4, 6}
	tests := []struct {
		seq          uint32
		wantNew      bool
		wantNext     uint32
		wantBuffered int
	}{
		{3, true, 0, 1},
		{5, true, 0, 2},
		{3, false, 0, 2}, // duplicate while buffered
		{4, true, 0, 3},
		{1, true, 0, 4},
		{0, true, 2, 3},  // fills the first gap; 1 drains, 3 still waits for 2
		{0, false, 2, 3}, // duplicate of a held command
		{2, true, 6, 0},  // fills the last gap; everything drains
		{5, false, 6, 0},
	}
	s := NewStream(9, 0)
	for i, tt := range tests {
		ok, err := s.Insert(cmd(9, tt.seq, frames[tt.seq]))
		if err != nil || ok != tt.wantNew || s.Next() != tt.wantNext || s.Buffered() != tt.wantBuffered {
			t.Fatalf("step %d Insert seq %d: (%v, %v) Next %d Buffered %d, want (%v, nil) Next %d Buffered %d",
				i, tt.seq, ok, err, s.Next(), s.Buffered(), tt.wantNew, tt.wantNext, tt.wantBuffered)
		}
	}
	var want []Command
	for i, f := range frames {
		want = append(want, cmd(9, uint32(i), f))
	}
	if got := held(s); !sameCommands(got, want) {
		t.Fatalf("held = %v, want %v", got, want)
	}
	if s.LastFrame() != 6 {
		t.Errorf("LastFrame() = %d, want 6", s.LastFrame())
	}
}

func TestStreamEarlyLiarDroppedOnDrain(t *testing.T) {
	// A buffered command is checked only when the gap before it fills. If it
	// then breaks the stream's rules, it and everything buffered after it are
	// dropped (the member's later datagrams resend them); the command that
	// filled the gap is still accepted.
	tests := []struct {
		name         string
		seal         Frame
		early        []Command
		fill         Command
		wantNext     uint32
		wantBuffered int
	}{
		{
			name:     "frame below the filling command",
			seal:     0,
			early:    []Command{cmd(0, 1, 3), cmd(0, 2, 5), cmd(0, 4, 6)},
			fill:     cmd(0, 0, 4),
			wantNext: 1,
		},
		{
			name:     "second drained command lies",
			seal:     0,
			early:    []Command{cmd(0, 1, 4), cmd(0, 2, 2), cmd(0, 3, 9)},
			fill:     cmd(0, 0, 4),
			wantNext: 2,
		},
		{
			name:     "frame at the seal",
			seal:     5,
			early:    []Command{cmd(0, 1, 5)},
			fill:     cmd(0, 0, 6),
			wantNext: 1,
		},
		{
			name:         "honest commands drain",
			seal:         0,
			early:        []Command{cmd(0, 1, 4), cmd(0, 2, 4), cmd(0, 4, 1)},
			fill:         cmd(0, 0, 4),
			wantNext:     3,
			wantBuffered: 1, // seq 4 is not checked until seq 3 arrives
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream(0, tt.seal)
			for _, c := range tt.early {
				if ok, err := s.Insert(c); !ok || err != nil {
					t.Fatalf("Insert early %+v: (%v, %v), want (true, nil)", c, ok, err)
				}
			}
			if ok, err := s.Insert(tt.fill); !ok || err != nil {
				t.Fatalf("Insert fill: (%v, %v), want (true, nil)", ok, err)
			}
			if s.Next() != tt.wantNext || s.Buffered() != tt.wantBuffered {
				t.Fatalf("Next %d Buffered %d, want %d %d", s.Next(), s.Buffered(), tt.wantNext, tt.wantBuffered)
			}
			for _, c := range held(s) {
				if c.Frame <= tt.seal {
					t.Errorf("held %+v at or under the seal %d", c, tt.seal)
				}
			}
		})
	}
	// The dropped command's resend is then judged like any next command.
	s := NewStream(0, 0)
	s.Insert(cmd(0, 1, 3))
	s.Insert(cmd(0, 0, 4))
	if _, err := s.Insert(cmd(0, 1, 3)); !errors.Is(err, ErrFrameDecreases) {
		t.Fatalf("resend of the dropped liar: err = %v, want ErrFrameDecreases", err)
	}
	if ok, err := s.Insert(cmd(0, 1, 4)); !ok || err != nil {
		t.Fatalf("honest resend: (%v, %v), want (true, nil)", ok, err)
	}
}

func TestStreamPromise(t *testing.T) {
	// Each step is a Promise(seal, next) or an Insert of seq (frames from
	// frames), followed by the expected seal. The stream starts sealed at 0.
	frames := []Frame{2, 3, 3, 5, 8, 8}
	type step struct {
		promise  bool
		seal     Frame
		next     uint32
		seq      uint32
		wantSeal Frame
	}
	promise := func(seal Frame, next uint32, want Frame) step {
		return step{promise: true, seal: seal, next: next, wantSeal: want}
	}
	insert := func(seq uint32, want Frame) step { return step{seq: seq, wantSeal: want} }
	tests := []struct {
		name  string
		steps []step
	}{
		{"prefix covers next: applies", []step{
			insert(0, 0), insert(1, 0), insert(2, 0), promise(2, 1, 2), promise(3, 3, 3),
		}},
		{"next beyond the prefix: waits, applies when the commands arrive", []step{
			insert(0, 0), promise(4, 3, 0), insert(2, 0), insert(1, 4),
		}},
		{"pending seal applies on the exact next", []step{
			promise(4, 3, 0), insert(0, 0), insert(1, 0), insert(2, 4),
		}},
		{"lower seal ignored", []step{
			insert(0, 0), insert(1, 0), promise(2, 2, 2), promise(1, 1, 2), promise(2, 2, 2),
		}},
		{"lower pending seal ignored", []step{
			insert(0, 0), promise(4, 3, 0), promise(2, 3, 0), insert(1, 0), insert(2, 4),
		}},
		{"old promise arriving late changes nothing", []step{
			insert(0, 0), insert(1, 0), insert(2, 0), insert(3, 0), promise(4, 4, 4), promise(2, 1, 4),
		}},
		{"higher pending replaces lower pending", []step{
			promise(2, 1, 0), promise(4, 3, 0), insert(1, 0), insert(2, 0), insert(0, 4),
		}},
		{"pending below the seal does not lower it", []step{
			insert(0, 0), insert(1, 0), insert(2, 0), promise(4, 5, 0), insert(3, 0), promise(7, 4, 7), insert(4, 7),
		}},
		{"next of zero on an empty stream", []step{
			promise(1, 0, 1),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream(4, 0)
			for i, st := range tt.steps {
				if st.promise {
					s.Promise(st.seal, st.next)
				} else if _, err := s.Insert(cmd(4, st.seq, frames[st.seq])); err != nil {
					t.Fatalf("step %d: Insert seq %d: %v", i, st.seq, err)
				}
				if s.Seal() != st.wantSeal {
					t.Fatalf("step %d (%+v): Seal() = %d, want %d", i, st, s.Seal(), st.wantSeal)
				}
			}
		})
	}
}

func TestStreamPromiseBindsLaterCommands(t *testing.T) {
	s := NewStream(0, -1)
	s.Insert(cmd(0, 0, 3))
	s.Promise(6, 1)
	if _, err := s.Insert(cmd(0, 1, 6)); !errors.Is(err, ErrUnderSeal) {
		t.Fatalf("command at the promised seal: err = %v, want ErrUnderSeal", err)
	}
	if ok, err := s.Insert(cmd(0, 1, 7)); !ok || err != nil {
		t.Fatalf("command past the promised seal: (%v, %v)", ok, err)
	}
}

func TestStreamPromisePendingKeepsLowerPromise(t *testing.T) {
	// Promise's doc: "A seal that arrives before its commands waits for
	// them". Two promises from one honest member, both ahead of the prefix:
	// (seal 2, next 2) and (seal 4, next 4). Once seq 0 and 1 are held, the
	// member's seal 2 is known to hold, but the second promise replaced the
	// first, so the seal stays at 0 until seq 2 and 3 arrive too.
	frames := []Frame{1, 2, 3, 4}
	s := NewStream(0, 0)
	s.Promise(2, 2)
	s.Promise(4, 4)
	s.Insert(cmd(0, 0, frames[0]))
	s.Insert(cmd(0, 1, frames[1]))
	if s.Seal() != 2 {
		t.Fatalf("Seal() = %d with seq 0..1 held and (2, next 2) promised, want 2", s.Seal())
	}
}

func TestStreamSince(t *testing.T) {
	s := NewStream(0, -1)
	for i, f := range []Frame{0, 1, 1, 2, 5} {
		s.Insert(cmd(0, uint32(i), f))
	}
	s.Trim(2)
	tests := []struct {
		seq      uint32
		wantSeqs []uint32
	}{
		{0, []uint32{2, 3, 4}}, // below Base: skipped
		{1, []uint32{2, 3, 4}},
		{2, []uint32{2, 3, 4}},
		{3, []uint32{3, 4}},
		{4, []uint32{4}},
		{5, nil}, // at Next
		{9, nil}, // after Next
	}
	for _, tt := range tests {
		got := s.Since(tt.seq)
		var seqs []uint32
		for _, c := range got {
			seqs = append(seqs, c.Seq)
		}
		if !slices.Equal(seqs, tt.wantSeqs) {
			t.Errorf("Since(%d) seqs = %v, want %v", tt.seq, seqs, tt.wantSeqs)
		}
		if len(tt.wantSeqs) == 0 && got != nil {
			t.Errorf("Since(%d) = %v, want nil", tt.seq, got)
		}
	}
	// The result aliases the stream's storage.
	view := s.Since(3)
	view[0].Payload = []byte("seen through the alias")
	if got := string(s.Since(3)[0].Payload); got != "seen through the alias" {
		t.Errorf("Since does not alias: payload %q", got)
	}
}

func TestStreamTrim(t *testing.T) {
	frames := []Frame{0, 1, 1, 2, 5}
	tests := []struct {
		name     string
		trims    []uint32
		wantBase uint32
	}{
		{"zero is a no-op", []uint32{0}, 0},
		{"partial", []uint32{2}, 2},
		{"twice", []uint32{2, 4}, 4},
		{"backwards is a no-op", []uint32{3, 1}, 3},
		{"exactly Next", []uint32{5}, 5},
		{"past Next clamps", []uint32{100}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream(0, -1)
			for i, f := range frames {
				s.Insert(cmd(0, uint32(i), f))
			}
			s.Insert(cmd(0, 7, 9)) // buffered past a gap: untouched by Trim
			seal := s.Seal()
			for _, seq := range tt.trims {
				s.Trim(seq)
			}
			want := streamState{Seal: seal, Base: tt.wantBase, Next: 5, LastFrame: 5, Buffered: 1}
			if got := stateOf(s); got != want {
				t.Fatalf("state = %+v, want %+v", got, want)
			}
			got := held(s)
			if len(got) != int(s.Next()-s.Base()) {
				t.Fatalf("holds %d commands, want Next-Base = %d", len(got), s.Next()-s.Base())
			}
			for i, c := range got {
				if c.Seq != s.Base()+uint32(i) {
					t.Fatalf("held[%d].Seq = %d, want %d", i, c.Seq, s.Base()+uint32(i))
				}
			}
			// The stream keeps going after any trim.
			if ok, err := s.Insert(cmd(0, 5, 6)); !ok || err != nil {
				t.Fatalf("Insert after Trim: (%v, %v)", ok, err)
			}
			if s.Next() != 6 || s.Base() != tt.wantBase {
				t.Fatalf("after Insert: Base %d Next %d", s.Base(), s.Next())
			}
		})
	}
}

func TestStreamTrimClears(t *testing.T) {
	// Trim moves the kept commands to the front of the backing array, so its
	// storage is reused, and zeroes the slots it vacates so their payloads
	// can be collected.
	s := NewStream(0, -1)
	for i := range 4 {
		s.Insert(cmd(0, uint32(i), Frame(i)))
	}
	old := s.Since(0)
	s.Trim(3)
	if old[0].Seq != 3 || old[0].Frame != 3 {
		t.Errorf("kept command not moved to the front: %+v", old[0])
	}
	for i := 1; i < 4; i++ {
		if old[i].Payload != nil || old[i].Frame != 0 || old[i].Seq != 0 {
			t.Errorf("vacated slot %d not cleared: %+v", i, old[i])
		}
	}
	if got := s.Since(0); len(got) != 1 || got[0].Seq != 3 {
		t.Errorf("after Trim(3): %+v", got)
	}
}

func TestStreamAppendFrame(t *testing.T) {
	frames := []Frame{2, 2, 2, 4, 5, 5, 9, 9, 9, 9}
	s := NewStream(1, 1)
	for i, f := range frames {
		s.Insert(cmd(1, uint32(i), f))
	}
	tests := []struct {
		frame    Frame
		wantSeqs []uint32
	}{
		{-1, nil},
		{1, nil},
		{2, []uint32{0, 1, 2}}, // first frame, a run
		{3, nil},               // absent, between runs
		{4, []uint32{3}},       // single
		{5, []uint32{4, 5}},
		{6, nil},
		{9, []uint32{6, 7, 8, 9}}, // last frame, run to the end
		{10, nil},
		{NoFrame, nil},
	}
	for _, tt := range tests {
		prefix := []Command{cmd(7, 99, 99)}
		got := s.AppendFrame(prefix, tt.frame)
		if !sameCommands(got[:1], prefix) {
			t.Errorf("AppendFrame(%d) clobbered dst: %v", tt.frame, got[:1])
		}
		var seqs []uint32
		for _, c := range got[1:] {
			seqs = append(seqs, c.Seq)
			if c.Frame != tt.frame {
				t.Errorf("AppendFrame(%d) returned %+v", tt.frame, c)
			}
		}
		if !slices.Equal(seqs, tt.wantSeqs) {
			t.Errorf("AppendFrame(%d) seqs = %v, want %v", tt.frame, seqs, tt.wantSeqs)
		}
	}
	// Against a linear scan, for every held length (odd and even sizes of the
	// binary search) and every frame around the held ones.
	for n := range len(frames) + 1 {
		s := NewStream(1, 1)
		for i, f := range frames[:n] {
			s.Insert(cmd(1, uint32(i), f))
		}
		for f := Frame(0); f <= 11; f++ {
			var want []Command
			for i, g := range frames[:n] {
				if g == f {
					want = append(want, cmd(1, uint32(i), g))
				}
			}
			if got := s.AppendFrame(nil, f); !sameCommands(got, want) {
				t.Errorf("n=%d AppendFrame(%d) = %v, want %v", n, f, got, want)
			}
		}
	}
	// Trimmed commands are no longer found.
	s.Trim(1)
	if got := s.AppendFrame(nil, 2); len(got) != 2 || got[0].Seq != 1 {
		t.Errorf("after Trim(1): AppendFrame(2) = %v, want seq 1 and 2", got)
	}
}

func TestStreamLastFrameAndBuffered(t *testing.T) {
	s := NewStream(0, -1)
	type want struct {
		last     Frame
		buffered int
	}
	steps := []struct {
		c Command
		want
	}{
		{cmd(0, 2, 7), want{-1, 1}}, // buffered commands do not move LastFrame
		{cmd(0, 4, 9), want{-1, 2}},
		{cmd(0, 0, 3), want{3, 2}},
		{cmd(0, 1, 5), want{7, 1}},
		{cmd(0, 3, 8), want{9, 0}},
	}
	for i, st := range steps {
		if _, err := s.Insert(st.c); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := (want{s.LastFrame(), s.Buffered()}); got != st.want {
			t.Fatalf("step %d: (LastFrame, Buffered) = %v, want %v", i, got, st.want)
		}
	}
	s.Trim(s.Next())
	if s.LastFrame() != 9 {
		t.Errorf("LastFrame() after trimming everything = %d, want 9", s.LastFrame())
	}
	if _, err := s.Insert(cmd(0, 5, 8)); !errors.Is(err, ErrFrameDecreases) {
		t.Errorf("frame below the trimmed last frame: err = %v, want ErrFrameDecreases", err)
	}
}
