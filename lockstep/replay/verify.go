package replay

import (
	"errors"
	"fmt"
	"io"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Result is what Verify found.
type Result struct {
	Header Header
	// Frames is the number of frames re-run; LastFrame the last of them
	// (-1 if none).
	Frames    int
	LastFrame bucket.Frame
	// FinalHash is the simulation's state hash after LastFrame.
	FinalHash uint64
	// Checkpoints is the number of recorded state hashes compared (the
	// trailer's final hash not included); Sections the number of section
	// hashes among them.
	Checkpoints int
	Sections    int
	Commands    int
	Changes     []Change
	// Ended reports whether the file ends with its trailer, End.
	Ended bool
	End   Trailer
	// Diverged is the first frame whose recorded state hash differs from
	// the re-run's, or -1; Section the first differing section, when known;
	// LastMatch the last checkpoint that matched before it, or -1. The
	// simulation diverged after LastMatch and at or before Diverged.
	Diverged  bucket.Frame
	Section   string
	LastMatch bucket.Frame
}

// Verify re-runs the replay r through the simulation factory builds from its
// header, bucket by bucket, comparing every recorded state hash (and section
// hashes, when both the replay and the simulation have them) and the final
// hash of the trailer. It stops at the first difference and returns an
// error wrapping ErrDiverged that names the frame (and section). The
// factory should refuse a header of another simulation or version with an
// error wrapping ErrSimMismatch (see Header.CheckSim).
//
// progress, when not nil, is called every 256 frames and at the end with
// the frames re-run so far and the total, which is known (else 0) when r
// can be read from its end: an *os.File at its start, or an io.ReaderAt
// with a Size method. The trailer read that way also bounds the frames the
// reader accepts, so a record of more frames than the trailer announces is
// refused before any of them is stepped.
//
// A damaged file is re-run up to its last whole chunk; Verify then returns
// the reader's error (ErrTruncated, ErrChecksum, ...) with the Result so far.
// Result is filled as far as Verify got, whatever the error.
func Verify(r io.Reader, factory func(Header) (lockstep.Simulation, error), progress func(frame, total int64)) (Result, error) {
	res := Result{LastFrame: -1, Diverged: -1, LastMatch: -1}
	var total int64
	trailer, ended := trailerOf(r)
	rd, err := NewReader(r)
	if err != nil {
		return res, err
	}
	if ended {
		total = int64(trailer.LastFrame) + 1
		rd.limitFrames(trailer.LastFrame)
	}
	res.Header = rd.Header()
	sim, err := factory(res.Header)
	if err != nil {
		if errors.Is(err, ErrSimMismatch) {
			return res, err
		}
		return res, fmt.Errorf("replay: building simulation %q version %q: %w", res.Header.SimName, res.Header.SimVersion, err)
	}
	if sim == nil {
		return res, fmt.Errorf("replay: the factory returned no simulation for %q version %q", res.Header.SimName, res.Header.SimVersion)
	}
	sectioned, _ := sim.(lockstep.SectionHasher)
	var mine []lockstep.Section
	report := func() {
		if progress != nil {
			progress(int64(res.Frames), total)
		}
	}
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			report()
			return res, err
		}
		switch rec.Kind {
		case KindFrame:
			sim.Step(rec.Frame, rec.Commands)
			res.Frames++
			res.LastFrame = rec.Frame
			res.Commands += len(rec.Commands)
			if res.Frames%256 == 0 {
				report()
			}
		case KindCheckpoint:
			res.Checkpoints++
			got := sim.Hash()
			mine = mine[:0]
			if sectioned != nil && len(rec.Sections) > 0 {
				mine = sectioned.SectionHashes(mine)
				res.Sections += len(rec.Sections)
			}
			section := firstDifference(rec.Sections, mine)
			if got != rec.Hash || section != "" {
				res.Diverged, res.Section = rec.Frame, section
				res.FinalHash = got
				report()
				msg := fmt.Sprintf("at frame %d the simulation's state hash is %016x, the replay's %016x", rec.Frame, got, rec.Hash)
				if section != "" {
					msg += fmt.Sprintf("; first divergent section %q", section)
				}
				if res.LastMatch >= 0 {
					msg += fmt.Sprintf(" (the checkpoint of frame %d matched)", res.LastMatch)
				} else {
					msg += " (no earlier checkpoint)"
				}
				return res, fmt.Errorf("%w: %s", ErrDiverged, msg)
			}
			res.LastMatch = rec.Frame
		case KindChange:
			res.Changes = append(res.Changes, rec.Change)
		case KindEnd:
			res.Ended, res.End = true, rec.Trailer
		}
	}
	res.FinalHash = sim.Hash()
	report()
	if res.Ended && res.FinalHash != res.End.FinalHash {
		res.Diverged = res.LastFrame
		msg := fmt.Sprintf("the final state hash at frame %d is %016x, the replay's %016x", res.LastFrame, res.FinalHash, res.End.FinalHash)
		if res.LastMatch >= 0 {
			msg += fmt.Sprintf(" (the checkpoint of frame %d matched)", res.LastMatch)
		}
		return res, fmt.Errorf("%w: %s", ErrDiverged, msg)
	}
	return res, nil
}

// firstDifference returns the name of the first section of want whose hash
// differs in got, or "" if none (or got is empty). Sections are compared
// by position; a name that differs counts as a difference.
func firstDifference(want, got []lockstep.Section) string {
	if len(got) == 0 || len(want) == 0 {
		return ""
	}
	for i, w := range want {
		if i >= len(got) || got[i] != w {
			return w.Name
		}
	}
	return ""
}
