package peer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
	"github.com/phalanx-net/phalanx/view"
)

// parted is a simulation of two sections, a and b, that can be drawn; the
// member given bent alters b from frame 31 on.
type parted struct {
	a, b  uint64
	steps int64
	bent  bool
}

func (s *parted) Step(f bucket.Frame, cmds []bucket.Command) {
	s.steps++
	s.a = s.a*1099511628211 ^ lockstep.InputHash(f, cmds)
	s.b = s.b*31 + uint64(len(cmds))
	if s.bent && f == 31 {
		s.b++
	}
}

func (s *parted) Hash() uint64 { return s.a ^ s.b<<1 }

func (s *parted) SectionHashes(dst []lockstep.Section) []lockstep.Section {
	return append(dst, lockstep.Section{Name: "a", Hash: s.a}, lockstep.Section{Name: "b", Hash: s.b})
}

func (s *parted) AppendSnapshot(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, s.a)
	dst = binary.LittleEndian.AppendUint64(dst, s.b)
	return binary.LittleEndian.AppendUint64(dst, uint64(s.steps))
}

func (s *parted) Restore(data []byte) error {
	if len(data) != 24 {
		return errors.New("parted: not a snapshot")
	}
	s.a, s.b = binary.LittleEndian.Uint64(data), binary.LittleEndian.Uint64(data[8:])
	s.steps = int64(binary.LittleEndian.Uint64(data[16:]))
	return nil
}

func (s *parted) Scene(sc *view.Scene) {
	sc.Frame, sc.Width, sc.Height = s.steps, 1, 1
	sc.Units = append(sc.Units[:0], view.Unit{ID: 1, HP: int(s.b % 100)})
}

// TestDesyncReports: two members whose states part at frame 31 each write
// a desync report with both sides' section hashes: the recording member
// beside its replay, with the replay; the other into DesyncReports,
// without one; both with their own world, and both sides' states at the
// last agreed checkpoint (30) and at frame 31, the other's sent by it.
func TestDesyncReports(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hosts := newHosts(t, 2)
	recDir, repDir := t.TempDir(), t.TempDir()
	params := SessionParams{SessionID: "desync-test", Members: 2, FrameMillis: 20, Sim: "parted", SimVersion: "1", Frames: 150}
	var members [2]*Member
	for i := range 2 {
		cfg := MemberConfig{
			Host: hosts[i], Params: params, Join: othersOf(hosts, i),
			NewSim: func(s *Agreement) lockstep.Simulation { return &parted{bent: s.Self == 1} },
			Input:  func(f bucket.Frame) [][]byte { return [][]byte{{byte(f)}} },
			Logger: testLogger(),
		}
		if i == 0 {
			cfg.Record = &Recording{Dir: recDir}
		} else {
			cfg.DesyncReports = repDir
		}
		m, err := Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		members[i] = m
	}
	for _, m := range members {
		if _, err := m.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range members {
		paths := m.DesyncReports()
		want := recDir
		if i == 1 {
			want = repDir
		}
		if len(paths) != 1 || filepath.Dir(paths[0]) != want {
			t.Fatalf("member %d wrote %v, want one report in %s", i, paths, want)
		}
		r, err := replay.ReadReport(paths[0])
		if err != nil {
			t.Fatal(err)
		}
		if r.Frame != 31 || r.Section != "b" || r.Member < 0 || r.SimName != "parted" || len(r.Ours) != 2 || len(r.Theirs) != 2 ||
			r.Ours[0].Hash != r.Theirs[0].Hash || r.Ours[1].Hash == r.Theirs[1].Hash {
			t.Errorf("member %d's report: %+v", i, r)
		}
		if (len(r.Replay) > 0) != (i == 0) {
			t.Errorf("member %d's report holds %d bytes of replay; want one only from the recording member", i, len(r.Replay))
		}
		if r.WorldFrame <= 31 || len(r.World) == 0 {
			t.Errorf("member %d's report: world after %d frames, %d bytes; want one past frame 31", i, r.WorldFrame, len(r.World))
		}
		if r.Agreed != 30 || len(r.States) != 4 {
			t.Fatalf("member %d's report: agreed %d, %d states; want 30 and 4 (both sides at frames 30 and 31)", i, r.Agreed, len(r.States))
		}
		hashAt := map[[2]int64]string{}
		for _, st := range r.States {
			var p parted
			if err := p.Restore(st.Data); err != nil || fmt.Sprintf("%016x", p.Hash()) != st.Hash || p.steps != st.Frame+1 {
				t.Errorf("member %d's report: member %d's state at frame %d restores to %+v (%v), hash %s", i, st.Member, st.Frame, p, err, st.Hash)
			}
			hashAt[[2]int64{int64(st.Member), st.Frame}] = st.Hash
		}
		if hashAt[[2]int64{0, 30}] == "" || hashAt[[2]int64{0, 30}] != hashAt[[2]int64{1, 30}] || hashAt[[2]int64{0, 31}] == hashAt[[2]int64{1, 31}] {
			t.Errorf("member %d's report: states %v; want both sides, equal at 30 and different at 31", i, hashAt)
		}
	}
}
