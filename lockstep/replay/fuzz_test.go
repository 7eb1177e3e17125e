package replay

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// FuzzReader feeds arbitrary bytes to the reader and to ReadTrailer: they
// must return records or an error wrapping one of the package's sentinels,
// never panic, and never report more frames than the trailer they accept.
func FuzzReader(f *testing.F) {
	for i, s := range []session{
		{members: 2, frames: 60, seed: 1, close: true},
		{members: 3, frames: 200, seed: 2, compress: true, flushes: true, changes: true, close: true},
		{members: 2, frames: 300, seed: 3, longRuns: true},
	} {
		data, _ := s.record(f)
		f.Add(data)
		f.Add(data[:len(data)*2/3])
		d := bytes.Clone(data)
		d[len(d)/2+i] ^= 0x40
		f.Add(d)
	}
	stmts := statementFile(f)
	f.Add(stmts)
	f.Add(stmts[:len(stmts)-50])
	f.Add([]byte(Magic))
	f.Add([]byte("not a replay at all"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sentinels := []error{ErrBadMagic, ErrVersion, ErrChecksum, ErrTruncated, ErrMalformed}
		known := func(err error) bool {
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return true
				}
			}
			return false
		}
		if tr, err := ReadTrailer(bytes.NewReader(data), int64(len(data))); err != nil && !known(err) {
			t.Fatalf("ReadTrailer: unexpected error %v", err)
		} else if err == nil && tr.Offset != int64(len(data)-TrailerSize) {
			t.Fatalf("trailer offset %d in %d bytes", tr.Offset, len(data))
		}
		rd, err := NewReader(bytes.NewReader(data))
		if err != nil {
			if !known(err) {
				t.Fatalf("NewReader: unexpected error %v", err)
			}
			return
		}
		h := rd.Header()
		if len(h.Members) < 1 || int(h.Self) >= len(h.Members) {
			t.Fatalf("accepted header %+v", h)
		}
		frames := 0
		for range 100000 { // a long run of empty frames may hold billions
			rec, err := rd.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if !known(err) {
					t.Fatalf("Next: unexpected error %v", err)
				}
				if _, again := rd.Next(); again != err {
					t.Fatalf("error not sticky: %v then %v", err, again)
				}
				return
			}
			switch rec.Kind {
			case KindFrame:
				if rec.Frame != bucket.Frame(frames) {
					t.Fatalf("frame %d after %d frames", rec.Frame, frames)
				}
				frames++
				for _, c := range rec.Commands {
					if int(c.Slot) >= len(h.Members) || c.Frame != rec.Frame {
						t.Fatalf("command %+v in frame %d", c, rec.Frame)
					}
				}
			case KindEnd:
				if rec.Trailer.LastFrame != bucket.Frame(frames-1) {
					t.Fatalf("trailer last frame %d after %d frames", rec.Trailer.LastFrame, frames)
				}
			}
		}
	})
}

// FuzzVerify re-runs arbitrary bytes as a replay of the test simulation:
// Verify must never panic, must fail only with one of the package's
// sentinels, must step no more frames than the file can hold (MaxChunkFrames
// per chunk of at least 15 bytes), and must step exactly the frames it
// reports, from frame 0.
func FuzzVerify(f *testing.F) {
	for i, s := range []session{
		{members: 2, frames: 80, seed: 1, close: true},
		{members: 3, frames: 150, seed: 2, compress: true, flushes: true, changes: true, close: true},
		{members: 2, frames: 300, seed: 3, longRuns: true, close: true},
	} {
		data, _ := s.record(f)
		f.Add(data)
		d := bytes.Clone(data)
		d[len(d)/3+i] ^= 0x01
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var sim *testSim
		factory := func(h Header) (lockstep.Simulation, error) {
			s, err := testFactory(h)
			sim, _ = s.(*testSim)
			return s, err
		}
		res, err := Verify(bytes.NewReader(data), factory, nil)
		if err != nil {
			known := false
			for _, s := range []error{ErrBadMagic, ErrVersion, ErrChecksum, ErrTruncated, ErrMalformed, ErrSimMismatch, ErrDiverged} {
				known = known || errors.Is(err, s)
			}
			if !known {
				t.Fatalf("Verify: unexpected error %v", err)
			}
		}
		if limit := MaxChunkFrames * (len(data)/15 + 1); res.Frames > limit {
			t.Fatalf("stepped %d frames from %d bytes", res.Frames, len(data))
		}
		if res.LastFrame != bucket.Frame(res.Frames-1) {
			t.Fatalf("%d frames, last %d", res.Frames, res.LastFrame)
		}
		if sim != nil && res.Frames > 0 && sim.frame != res.LastFrame {
			t.Fatalf("the simulation stepped to frame %d, the result says %d", sim.frame, res.LastFrame)
		}
	})
}
