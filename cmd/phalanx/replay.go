package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/examples/rts"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
	"github.com/phalanx-net/phalanx/lockstep/replay"
	"github.com/phalanx-net/phalanx/peer"
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
		fmt.Fprintln(stderr, "usage: phalanx replay verify [--signed] FILE...")
		fmt.Fprintln(stderr, "       phalanx replay inspect FILE")
		fmt.Fprintln(stderr, "       phalanx replay view [--addr ADDR] FILE|REPORT...")
		fmt.Fprintln(stderr, "\nverify   checks the members' signatures over the recorded commands, then re-runs each replay and")
		fmt.Fprintln(stderr, "         compares every recorded state hash; exits 0 only if all hold (--signed: an unsigned replay fails)")
		fmt.Fprintln(stderr, "inspect  prints a replay's header, members, frames and end, and what is wrong with a damaged one")
		fmt.Fprintln(stderr, "view     serves a page (its URL printed) to watch replays frame by frame; given replays that diverged,")
		fmt.Fprintln(stderr, "         it opens at the first divergent frame, names the section and draws the worlds side by side;")
		fmt.Fprintln(stderr, "         a desync report (desync-member-N-frame-F.json) opens at its divergence")
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
	case "view":
		return replayView(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		usage()
		return 0
	}
	fmt.Fprintf(stderr, "phalanx replay: unknown subcommand %q\n\n", args[0])
	usage()
	return 2
}

// parseFiles parses a subcommand's flags (-h, and those flags adds) and
// returns its files.
func parseFiles(name, usage string, args []string, stderr io.Writer, flags ...func(*flag.FlagSet)) ([]string, int) {
	fs := flag.NewFlagSet("phalanx replay "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, f := range flags {
		f(fs)
	}
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
	var signed bool
	files, code := parseFiles("verify", "[--signed] FILE...", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&signed, "signed", false, "fail a replay that holds no signed statements")
	})
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
		sigs, err := checkFileSignatures(name)
		if err == nil && signed && sigs.Statements == 0 {
			err = errors.New("unsigned: the replay holds no signed statements (--signed)")
		}
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "FAIL %s: %v\n", name, err)
			continue
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
		fmt.Fprintf(stdout, "ok %s: %d frames, final hash %016x%s; %s\n", name, res.Frames, res.FinalHash, ended, describeSignatures(sigs))
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// checkFileSignatures checks the statements recorded in replay name with
// the members' keys (statementVerifier).
func checkFileSignatures(name string) (replay.Signatures, error) {
	f, err := os.Open(name)
	if err != nil {
		return replay.Signatures{}, err
	}
	defer f.Close()
	rd, err := replay.NewReader(f)
	if err != nil {
		return replay.Signatures{}, err
	}
	h := rd.Header()
	if slices.Contains(h.Members, "") {
		// Open slots: the members that took them are named by the join
		// records.
		h.Members = slices.Clone(h.Members)
		for rec, err := rd.Next(); err == nil; rec, err = rd.Next() {
			if c := rec.Change; rec.Kind == replay.KindChange && c.Kind == replay.ChangeJoin && h.Members[c.Member] == "" {
				h.Members[c.Member] = c.Detail
			}
		}
	}
	v, keyErr := statementVerifier(h)
	if keyErr != nil {
		v = noKeys{}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return replay.Signatures{}, err
	}
	sigs, err := replay.CheckSignatures(f, v)
	if keyErr != nil && (sigs.Statements > 0 || errors.Is(err, replay.ErrSignature)) {
		return sigs, keyErr // signed, but by members whose keys we cannot get
	}
	return sigs, err
}

// noKeys verifies nothing: the verifier of members whose keys are unknown.
type noKeys struct{}

func (noKeys) Verify(bucket.Slot, []byte, []byte) bool { return false }

// statementVerifier returns the verifier of a replay's statements: the
// public keys the members' peer IDs embed, or, for a session of phalanx
// sim (members named member-0, member-1, ...), the simulated keys the
// virtual harness derives from the session seed (lockstep.Ed25519Keys),
// which prove nothing against whoever knows the seed.
func statementVerifier(h replay.Header) (lockstep.Verifier, error) {
	simulated := true
	for i, id := range h.Members {
		simulated = simulated && id == fmt.Sprintf("member-%d", i)
	}
	if simulated {
		_, v := lockstep.Ed25519Keys(len(h.Members), h.Seed[:])
		return v, nil
	}
	v, err := peer.StatementVerifier(h.Members)
	if err != nil {
		return nil, fmt.Errorf("the members' keys: %w", err)
	}
	return v, nil
}

// describeSignatures says what CheckSignatures found, for people.
func describeSignatures(s replay.Signatures) string {
	if s.Statements == 0 {
		return "unsigned"
	}
	members := 0
	for _, n := range s.Covered {
		if n > 0 {
			members++
		}
	}
	out := fmt.Sprintf("signatures hold: %d of %d statements checked, vouching for the commands of %d of %d members", s.Checked, s.Statements, members, len(s.Covered))
	if s.Unchecked > 0 {
		out += fmt.Sprintf(" (%d cover commands past the recording)", s.Unchecked)
	}
	return out
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
	statements                                        int
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
		case replay.KindStatement:
			in.statements++
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
	if in.statements == 0 {
		fmt.Fprintln(stdout, "  signatures   none: unsigned")
	} else {
		fmt.Fprintf(stdout, "  signatures   %d statements (phalanx replay verify checks them)\n", in.statements)
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
