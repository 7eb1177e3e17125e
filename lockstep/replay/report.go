package replay

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"

	"github.com/phalanx-net/phalanx/lockstep"
)

// Desync reports (docs/replay-format.md, §11).

// ReportFormat is the format field of every desync report; ReportVersion
// is the version this package writes and the newest it reads.
const (
	ReportFormat  = "phalanx desync report"
	ReportVersion = 2
)

// Report is what one member knows of a desync, in one self-contained
// file: the versions that ran, the first divergent frame and section, the
// section hashes of both sides of that frame, and the member's replay as
// recorded when the desync was found (every frame to the divergent one
// and a few after it).
type Report struct {
	Format  string `json:"format"`  // ReportFormat
	Version int    `json:"version"` // ReportVersion
	// Engine, SimName and SimVersion are those of the replay's header, or
	// of the member when it recorded none.
	Engine     string   `json:"engine"`
	Build      string   `json:"build"` // the writing program's build: Go version, module, version control revision
	SimName    string   `json:"sim"`
	SimVersion string   `json:"sim_version"`
	Session    string   `json:"session"` // the header's session, in hex
	Members    []string `json:"members"`
	Self       int      `json:"self"` // the member that wrote the report
	// Frame is the first divergent frame; Member the member whose hashes
	// differ from the majority's; With the member whose hashes the
	// reporting member compared with its own; Section the first divergent
	// section, when known; Detail the event's own words.
	Frame   int64  `json:"frame"`
	Member  int    `json:"member"`
	With    int    `json:"with"`
	Section string `json:"section,omitempty"`
	Detail  string `json:"detail"`
	// Ours and Theirs are the section hashes of Frame on the reporting
	// member and on With; empty when the simulation hashes no sections.
	Ours   []ReportSection `json:"ours"`
	Theirs []ReportSection `json:"theirs"`
	// Replay is the reporting member's replay file as it stood (flushed)
	// when the desync was found, without its trailer; empty when the
	// member recorded none.
	Replay []byte `json:"replay,omitempty"`
	// World is the reporting member's world as it stood when the desync
	// was found, after WorldFrame frames were stepped, as a simulation that
	// can be drawn describes it (a view.Scene in JSON); absent for one that
	// cannot. It is not the state (a replay re-run from its commands cannot
	// give a world changed by something else): it shows what differs.
	WorldFrame int64           `json:"world_frame,omitempty"`
	World      json.RawMessage `json:"world,omitempty"`
	// State is the reporting member's whole simulation state at the same
	// moment (after WorldFrame frames), as its lockstep.Snapshotter saves
	// it; absent for a simulation that is not one.
	State []byte `json:"state,omitempty"`
	// Agreed is the last checkpoint before Frame (LastAgreedCheckpoint):
	// the newest frame whose hash reports every member agreed on; -1 when
	// none was.
	Agreed int64 `json:"agreed"`
	// States are the simulation's states after Agreed and after Frame, as
	// its lockstep.Snapshotter saved them when it stepped them: the
	// reporting member's (Self), and the other side's (With) as that
	// member sent them. Empty for a simulation that is not a Snapshotter;
	// a state the member no longer held, or that With did not send in
	// time, is missing.
	States []ReportState `json:"states,omitempty"`
}

// ReportState is one member's simulation state after one frame, in a
// Report.
type ReportState struct {
	Member int    `json:"member"`
	Frame  int64  `json:"frame"` // the state after stepping this frame
	Hash   string `json:"hash"`  // the state hash after it, 16 hex digits
	Data   []byte `json:"data"`  // as lockstep.Snapshotter.AppendSnapshot saves it
}

// ReportSection is one section's hash in a Report, as 16 hex digits.
type ReportSection struct {
	Name string `json:"name"`
	Hash string `json:"hash"`
}

// NewReport returns the report of desync event e (lockstep.EventDesync)
// found by the member that recorded under header h (its Self), with its
// replay as recorded so far (nil: none). Its Agreed assumes the core's
// default hash interval (lockstep.DefaultHashInterval); a caller whose
// core exchanges hashes at another sets it with LastAgreedCheckpoint. It
// holds no states: AddStates adds them.
func NewReport(h Header, e lockstep.Event, recorded []byte) Report {
	r := Report{
		Format: ReportFormat, Version: ReportVersion,
		Engine: h.Engine, SimName: h.SimName, SimVersion: h.SimVersion,
		Session: hex.EncodeToString(h.Session), Members: h.Members, Self: int(h.Self),
		Frame: int64(e.Frame), Member: int(e.Member), With: int(e.With), Section: e.Section, Detail: e.Detail,
		Ours: sectionsOf(e.Ours), Theirs: sectionsOf(e.Theirs), Replay: recorded,
		Agreed: int64(LastAgreedCheckpoint(e.Frame, 0)),
	}
	if r.Engine == "" {
		r.Engine = EngineVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		r.Build = bi.GoVersion + " " + bi.Main.Path + " " + bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || (s.Key == "vcs.modified" && s.Value == "true") {
				r.Build += " " + s.Key + "=" + s.Value
			}
		}
	}
	return r
}

func sectionsOf(s []lockstep.Section) []ReportSection {
	out := make([]ReportSection, 0, len(s))
	for _, x := range s {
		out = append(out, ReportSection{Name: x.Name, Hash: hashText(x.Hash)})
	}
	return out
}

// hashText writes a hash as a report does: 16 hex digits.
func hashText(h uint64) string { return fmt.Sprintf("%016x", h) }

// Name returns the report's conventional file name:
// desync-member-SELF-frame-FRAME.json.
func (r Report) Name() string {
	return "desync-member-" + strconv.Itoa(r.Self) + "-frame-" + strconv.FormatInt(r.Frame, 10) + ".json"
}

// WriteReport writes r into dir (created if missing) under r.Name(), in
// full or not at all (a temporary file renamed), and returns its path.
func WriteReport(dir string, r Report) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("desync report: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("desync report: %w", err)
	}
	path := filepath.Join(dir, r.Name())
	tmp, err := os.CreateTemp(dir, ".desync-*")
	if err != nil {
		return "", fmt.Errorf("desync report: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("desync report: %w", err)
	}
	return path, nil
}

// IsReport reports whether b, the start of a file, looks like a desync
// report rather than a replay: a JSON object.
func IsReport(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// ReadReport reads a desync report. It returns an error wrapping
// ErrMalformed for a file that is not one, and ErrVersion for a newer
// version.
func ReadReport(path string) (Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Report{}, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return Report{}, fmt.Errorf("%w: %s is not a desync report: %v", ErrMalformed, path, err)
	}
	switch {
	case r.Format != ReportFormat:
		return Report{}, fmt.Errorf("%w: %s is not a desync report (format %q)", ErrMalformed, path, r.Format)
	case r.Version < 1 || r.Version > ReportVersion:
		return Report{}, fmt.Errorf("%w: %s is a desync report of version %d; this reader reads versions 1 to %d", ErrVersion, path, r.Version, ReportVersion)
	}
	if r.Version == 1 {
		r.Agreed = -1 // version 1 holds no states
	}
	return r, nil
}
