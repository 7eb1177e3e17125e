package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/examples/rts"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
	"github.com/phalanx-net/phalanx/lockstep/replay"
	"github.com/phalanx-net/phalanx/rng"
)

// nullSimVersion is the version of the null simulation's rules
// (locksteptest.NullSim) in replay headers.
const nullSimVersion = "1"

// replaySim builds the simulation a replay was recorded with, from its
// header. It is the factory of replay.Verify for every game newGame knows.
func replaySim(h replay.Header) (lockstep.Simulation, error) {
	switch h.SimName {
	case rts.SimName:
		if err := h.CheckSim(rts.SimName, rts.SimVersion); err != nil {
			return nil, err
		}
		var cfg rts.Config
		if err := cfg.UnmarshalBinary(h.SimConfig); err != nil {
			return nil, fmt.Errorf("the replay's rts config: %w", err)
		}
		if cfg.Players != len(h.Members) {
			return nil, fmt.Errorf("the replay's rts config is for %d players, the replay has %d members", cfg.Players, len(h.Members))
		}
		return rts.NewSim(cfg)
	case "null":
		if err := h.CheckSim("null", nullSimVersion); err != nil {
			return nil, err
		}
		return &locksteptest.NullSim{}, nil
	}
	return nil, fmt.Errorf("%w: the replay was recorded with simulation %q version %q; this build runs %q version %q and %q version %q",
		replay.ErrSimMismatch, h.SimName, h.SimVersion, rts.SimName, rts.SimVersion, "null", nullSimVersion)
}

func runReplay(args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintln(stderr, "usage: phalanx replay verify FILE...")
		fmt.Fprintln(stderr, "       phalanx replay inspect FILE")
		fmt.Fprintln(stderr, "\nverify   re-runs each replay and compares every recorded state hash; exits 0 only if all match")
		fmt.Fprintln(stderr, "inspect  prints a replay's header, members, frames and end, and what is wrong with a damaged one")
		fmt.Fprintln(stderr, "\nReplays are recorded with \"phalanx sim --record DIR\".")
	}
	if len(args) == 0 {
		usage()
		return 2
	}
	switch args[0] {
	case "verify":
		return replayVerify(args[1:], stdout, stderr)
	case "inspect":
		return replayInspect(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		usage()
		return 0
	}
	fmt.Fprintf(stderr, "phalanx replay: unknown subcommand %q\n\n", args[0])
	usage()
	return 2
}

// parseFiles parses a subcommand's flags (only -h) and returns its files.
func parseFiles(name, usage string, args []string, stderr io.Writer) ([]string, int) {
	fs := flag.NewFlagSet("phalanx replay "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, "usage: phalanx replay "+name+" "+usage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return nil, 2
	}
	return fs.Args(), -1
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func replayVerify(args []string, stdout, stderr io.Writer) int {
	files, code := parseFiles("verify", "FILE...", args, stderr)
	if code >= 0 {
		return code
	}
	bar := isTerminal(stderr)
	failed := 0
	for _, name := range files {
		var progress func(frame, total int64)
		if bar {
			progress = func(frame, total int64) { drawProgress(stderr, name, frame, total) }
		}
		res, err := verifyFile(name, progress)
		if bar {
			fmt.Fprint(stderr, "\r\033[K")
		}
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "FAIL %s: %v%s\n", name, err, verifiedSoFar(res))
			continue
		}
		ended := ""
		if res.End.Reason != replay.EndCompleted {
			ended = " (" + res.End.Reason.String() + ")"
		}
		fmt.Fprintf(stdout, "ok %s: %d frames, final hash %016x%s\n", name, res.Frames, res.FinalHash, ended)
	}
	if failed > 0 {
		return 1
	}
	return 0
}

func verifyFile(name string, progress func(frame, total int64)) (replay.Result, error) {
	f, err := os.Open(name)
	if err != nil {
		return replay.Result{Diverged: -1}, err
	}
	defer f.Close()
	return replay.Verify(f, replaySim, progress)
}

// verifiedSoFar describes how far a failed verification got.
func verifiedSoFar(res replay.Result) string {
	if res.Frames == 0 || res.Diverged >= 0 {
		return ""
	}
	s := fmt.Sprintf(" (re-ran %d frames", res.Frames)
	if res.Checkpoints > 0 {
		s += fmt.Sprintf(": all %d checkpoints up to frame %d match", res.Checkpoints, res.LastMatch)
	}
	return s + ")"
}

func drawProgress(w io.Writer, name string, frame, total int64) {
	const width = 30
	if total <= 0 {
		fmt.Fprintf(w, "\r\033[Kverifying %s: frame %d", name, frame)
		return
	}
	done := int(min(frame, total) * width / total)
	fmt.Fprintf(w, "\r\033[Kverifying %s [%s%s] %3d%% %d/%d frames", name,
		strings.Repeat("#", done), strings.Repeat(".", width-done), frame*100/total, frame, total)
}

// inspection gathers what replayInspect prints about the body.
type inspection struct {
	frames, busy, commands, checkpoints, withSections int
	perMember                                         []int
	bytesPerMember                                    []int
	sections                                          []string
	changes                                           []replay.Change
	end                                               *replay.Trailer
}

func replayInspect(args []string, stdout, stderr io.Writer) int {
	files, code := parseFiles("inspect", "FILE", args, stderr)
	if code >= 0 {
		return code
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "usage: phalanx replay inspect FILE")
		return 2
	}
	name := files[0]
	f, err := replay.OpenFile(name)
	if err != nil {
		fmt.Fprintf(stdout, "FAIL %s: %v\n", name, err)
		return 1
	}
	defer f.Close()
	h := f.Header()
	fmt.Fprintf(stdout, "%s: Phalanx replay, format version %d, %d bytes\n", name, h.Version, f.Size())
	fmt.Fprintf(stdout, "  engine       %s\n", h.Engine)
	fmt.Fprintf(stdout, "  session      %x\n", h.Session)
	fmt.Fprintf(stdout, "  simulation   %s version %s (config of %d bytes)\n", h.SimName, h.SimVersion, len(h.SimConfig))
	fmt.Fprintf(stdout, "  seed         %x\n", h.Seed[:])
	rate := float64(time.Second) / float64(h.FrameLength)
	fmt.Fprintf(stdout, "  frame        %v (%.4g Hz), state hash every %d frames\n", h.FrameLength, rate, h.HashInterval)
	fmt.Fprintf(stdout, "  recorded by  member %d\n", h.Self)

	in := inspection{perMember: make([]int, len(h.Members)), bytesPerMember: make([]int, len(h.Members))}
	var readErr error
	for {
		rec, err := f.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		switch rec.Kind {
		case replay.KindFrame:
			in.frames++
			if len(rec.Commands) > 0 {
				in.busy++
			}
			for _, c := range rec.Commands {
				in.commands++
				in.perMember[c.Slot]++
				in.bytesPerMember[c.Slot] += len(c.Payload)
			}
		case replay.KindCheckpoint:
			in.checkpoints++
			if len(rec.Sections) > 0 {
				in.withSections++
				in.sections = in.sections[:0]
				for _, s := range rec.Sections {
					in.sections = append(in.sections, s.Name)
				}
			}
		case replay.KindChange:
			in.changes = append(in.changes, rec.Change)
		case replay.KindEnd:
			t := rec.Trailer
			in.end = &t
		}
	}

	fmt.Fprintf(stdout, "  members      %d\n", len(h.Members))
	for i, id := range h.Members {
		fmt.Fprintf(stdout, "    %2d  %-20s %6d commands, %d bytes\n", i, id, in.perMember[i], in.bytesPerMember[i])
	}
	played := time.Duration(in.frames) * h.FrameLength
	fmt.Fprintf(stdout, "  frames       %d (%v of play), %d with commands, %d commands\n", in.frames, played, in.busy, in.commands)
	fmt.Fprintf(stdout, "  checkpoints  %d", in.checkpoints)
	if in.withSections > 0 {
		fmt.Fprintf(stdout, ", %d with sections %s", in.withSections, strings.Join(in.sections, ", "))
	}
	fmt.Fprintln(stdout)
	if len(in.changes) == 0 {
		fmt.Fprintln(stdout, "  membership   no changes")
	}
	for _, c := range in.changes {
		fmt.Fprintf(stdout, "  membership   %v\n", c)
	}
	fmt.Fprintf(stdout, "  chunks       %d read whole\n", f.Chunks())
	if in.end != nil {
		fmt.Fprintf(stdout, "  end          %s at frame %d, final hash %016x\n", in.end.Reason, in.end.LastFrame, in.end.FinalHash)
	}
	if readErr == nil {
		return 0
	}
	// A file is valid for inspect exactly when it is for verify: both read
	// it with the same reader, bounded by the same trailer, and end with
	// the same FAIL line.
	fmt.Fprintf(stdout, "  damaged      readable up to frame %d; then: %v\n", f.LastFrame(), readErr)
	if in.end == nil {
		if t, err := f.Trailer(); err == nil {
			fmt.Fprintf(stdout, "  trailer      %s at frame %d, final hash %016x (read from the end of the file)\n", t.Reason, t.LastFrame, t.FinalHash)
		} else {
			fmt.Fprintf(stdout, "  trailer      none: %v\n", err)
		}
	}
	fmt.Fprintf(stdout, "FAIL %s: %v\n", name, readErr)
	return 1
}

// recorder writes one replay per member of a phalanx sim run, as
// DIR/member-N.phx.
type recorder struct {
	frames  bucket.Frame
	files   []*os.File
	writers []*replay.Writer
	sims    []lockstep.Simulation
	final   []uint64 // state hash after the last frame, once recorded
	done    []bool
	err     error
}

// newRecorder creates dir and one replay file per member.
func newRecorder(dir string, f *runFlags, g *game) (*recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	h := replay.Header{
		Session:     binary.LittleEndian.AppendUint16(nil, uint16(f.seed)), // the harness's session tag
		FrameLength: time.Duration(f.frameMS) * time.Millisecond,
		SimName:     g.name,
		SimVersion:  g.version,
		SimConfig:   g.config,
		Seed:        rng.SeedFromUint64(f.seed),
	}
	for i := range f.peers {
		h.Members = append(h.Members, fmt.Sprintf("member-%d", i))
	}
	r := &recorder{
		frames: bucket.Frame(f.frames),
		sims:   make([]lockstep.Simulation, f.peers),
		final:  make([]uint64, f.peers),
		done:   make([]bool, f.peers),
	}
	for i := range f.peers {
		file, err := os.Create(filepath.Join(dir, fmt.Sprintf("member-%d.phx", i)))
		if err != nil {
			r.finish()
			return nil, err
		}
		r.files = append(r.files, file)
		h.Self = bucket.Slot(i)
		w, err := replay.NewWriter(file, h)
		if err != nil {
			r.finish()
			return nil, err
		}
		r.writers = append(r.writers, w)
	}
	return r, nil
}

// hook returns the locksteptest.Config.OnStep function recording every
// member's buckets up to the run's last frame, or nil for a nil recorder.
func (r *recorder) hook() func(bucket.Slot, lockstep.Bucket, lockstep.Simulation) {
	if r == nil {
		return nil
	}
	return func(slot bucket.Slot, b lockstep.Bucket, sim lockstep.Simulation) {
		if b.Frame >= r.frames {
			return // members run on while the slowest finishes: not part of the run
		}
		r.sims[slot] = sim
		if err := r.writers[slot].Record(b, sim); err != nil {
			// The writer keeps its error: this member's file ends at its
			// last whole chunk; the others go on.
			if r.err == nil {
				r.err = fmt.Errorf("recording member %d: %w", slot, err)
			}
			return
		}
		if b.Frame == r.frames-1 {
			r.final[slot], r.done[slot] = sim.Hash(), true
		}
	}
}

// eventHook returns the locksteptest.Config.OnEvent function recording
// every member's membership changes (drops and leaves) as its core reports
// them, or nil for a nil recorder.
func (r *recorder) eventHook() func(bucket.Slot, lockstep.Event) {
	if r == nil {
		return nil
	}
	return func(slot bucket.Slot, e lockstep.Event) {
		if c, ok := replay.ChangeOf(e); ok {
			r.writers[slot].Membership(c) // an error is kept by the writer and returned by Close
		}
	}
}

// finish closes every replay: completed for the members that recorded
// every frame, closed early for the others. It returns the first error.
func (r *recorder) finish() error {
	if r == nil {
		return nil
	}
	err := r.err
	for i, w := range r.writers {
		reason, hash := replay.EndCompleted, r.final[i]
		if !r.done[i] {
			reason, hash = replay.EndClosedEarly, 0
			if r.sims[i] != nil {
				hash = r.sims[i].Hash() // it has stepped no further than it recorded
			}
		}
		if cerr := w.Close(bucket.Frame(w.Frames()-1), hash, reason); cerr != nil && err == nil {
			err = fmt.Errorf("closing the replay of member %d: %w", i, cerr)
		}
	}
	for _, f := range r.files {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}
