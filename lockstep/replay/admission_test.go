package replay

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/rng"
)

// TestAdmissionRestartsTheStream records a member that is dropped and
// rejoins: its new stream's sequence numbers count from 0 again at the
// admission frame, and the reader gives back every command as written.
func TestAdmissionRestartsTheStream(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Session: []byte{1, 0}, FrameLength: 50 * time.Millisecond, SimName: "null", SimVersion: "1",
		Seed: rng.SeedFromUint64(1), Members: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	cmd := func(slot bucket.Slot, seq uint32, f bucket.Frame) bucket.Command {
		return bucket.Command{Slot: slot, Seq: seq, Frame: f, Payload: []byte{byte(seq)}}
	}
	frames := map[bucket.Frame][]bucket.Command{
		1: {cmd(1, 0, 1)},
		2: {cmd(0, 0, 2), cmd(1, 7, 2)},
		3: {cmd(1, 8, 3)}, // the old stream's last command, after the rejoin is recorded
		6: {cmd(0, 1, 6), cmd(1, 0, 6)},
		7: {cmd(1, 1, 7)},
	}
	for f := range bucket.Frame(8) {
		if f == 3 {
			must(t, w.Membership(Change{Kind: ChangeDrop, Frame: 4, Member: 1, LastFrame: 3}))
			must(t, w.Membership(Change{Kind: ChangeRejoin, Frame: 6, Member: 1, LastFrame: -1, Detail: "rejoined"}))
		}
		must(t, w.Step(f, frames[f]))
	}
	must(t, w.Close(7, 1, EndCompleted))
	w2, err := NewWriter(&bytes.Buffer{}, Header{Session: []byte{1, 0}, FrameLength: time.Second, SimName: "x", SimVersion: "1", Members: []string{"a"}})
	must(t, err)
	must(t, w2.Step(0, nil))
	if err := w2.Membership(Change{Kind: ChangeJoin, Frame: 0, Member: 0, LastFrame: -1}); err == nil {
		t.Fatal("an admission at a frame already recorded was accepted")
	}
	_, recs, err := readAll(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var kinds []ChangeKind
	for _, r := range recs {
		switch r.Kind {
		case KindFrame:
			if want := frames[r.Frame]; len(want) != len(r.Commands) {
				t.Fatalf("frame %d: %v, want %v", r.Frame, r.Commands, want)
			}
			for i, c := range r.Commands {
				if w := frames[r.Frame][i]; c.Slot != w.Slot || c.Seq != w.Seq || !bytes.Equal(c.Payload, w.Payload) {
					t.Fatalf("frame %d: %v, want %v", r.Frame, r.Commands, frames[r.Frame])
				}
			}
		case KindChange:
			kinds = append(kinds, r.Change.Kind)
		}
	}
	if len(kinds) != 2 || kinds[1] != ChangeRejoin || kinds[1].String() != "rejoin" {
		t.Fatalf("changes %v", kinds)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A spectator's admission is recorded at its frame (never before the next
// frame to record), read back as written, and refused in a file of format
// version 3, which had no such kind.
func TestSpectatorChange(t *testing.T) {
	w, buf := newTestWriter(t, 2)
	spec := Change{Kind: ChangeSpectator, Frame: 3, Member: 1, LastFrame: -1, Detail: "spectator-0"}
	for f := range bucket.Frame(6) {
		if f == 3 {
			must(t, w.Membership(spec))
			if err := w.Membership(Change{Kind: ChangeSpectator, Frame: 2, Member: 0, LastFrame: -1}); err == nil {
				t.Fatal("a spectator at a frame already recorded was accepted")
			}
		}
		must(t, w.Step(f, nil))
	}
	must(t, w.Close(5, 1, EndCompleted))
	_, recs, err := readAll(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var got []Change
	for _, r := range recs {
		if r.Kind == KindChange {
			got = append(got, r.Change)
		}
	}
	if len(got) != 1 || got[0] != spec || got[0].String() != "spectator served by member 1 from frame 3: spectator-0" {
		t.Fatalf("changes %v", got)
	}
	if _, _, err := readAll(setVersion(buf.Bytes(), 3)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "change of kind 5") {
		t.Fatalf("a spectator in a version-3 file: %v", err)
	}
}
