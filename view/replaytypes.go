package view

// The replays the page shows (see Config.Replays; view/replayview opens
// replay files): plain data, as the page receives it.

// Replays answer the page's questions about replays. Implementations must
// be safe for concurrent use.
type Replays interface {
	// Info describes the replays and where they first disagree.
	Info() ReplaysInfo
	// Frame returns every replay at frame f.
	Frame(f int64) (ReplayFrame, error)
}

// ReplaysInfo describes the replays and how they differ.
type ReplaysInfo struct {
	Files  []ReplayFileInfo `json:"files"`
	Frames int64            `json:"frames"` // frames of the longest replay
	// Divergence is set when the replays disagree: their recorded state
	// hashes, or their buckets; or, for a desync report alone, where the
	// report says they did.
	Divergence *Divergence `json:"divergence,omitempty"`
	// Reports are the desync reports the replays came from.
	Reports []DesyncReport `json:"reports"`
	// Checked is false until every file has been re-run from its buckets
	// to check that it reproduces its recorded hashes (ReplayFileInfo's
	// Reproduces, RerunFrame and RerunSection are set then).
	Checked bool `json:"checked"`
}

// DesyncReport is what a member's desync report says (see
// lockstep/replay.Report): the first divergent frame and section, and the
// section hashes of both sides.
type DesyncReport struct {
	File    string        `json:"file"`
	Engine  string        `json:"engine"`
	Build   string        `json:"build"`
	Sim     string        `json:"sim"`
	Self    int           `json:"self"`   // the member that wrote it
	Member  int           `json:"member"` // whose hashes differ from the majority
	With    int           `json:"with"`   // the member it compared with
	Frame   int64         `json:"frame"`
	Agreed  int64         `json:"agreed"` // the last agreed checkpoint before Frame, or -1
	Section string        `json:"section,omitempty"`
	Detail  string        `json:"detail"`
	Ours    []SectionHash `json:"ours"`
	Theirs  []SectionHash `json:"theirs"`
}

// ReplayFileInfo describes one replay.
type ReplayFileInfo struct {
	Name        string   `json:"name"`
	Sim         string   `json:"sim"`
	Members     []string `json:"members"`
	Self        int      `json:"self"`
	Frames      int64    `json:"frames"`
	FrameMS     float64  `json:"frame_ms"`
	End         string   `json:"end"`
	Checkpoints int      `json:"checkpoints"`
	// Reproduces is false when re-running the file's own buckets does not
	// give its recorded hashes: its simulation went astray by something
	// that is not in its commands. RerunFrame and RerunSection say where.
	Reproduces   bool   `json:"reproduces"`
	RerunFrame   int64  `json:"rerun_frame"`
	RerunSection string `json:"rerun_section,omitempty"`
	// CheckedTo is how many of its frames the check has re-run so far.
	CheckedTo int64  `json:"checked_to"`
	Error     string `json:"error,omitempty"`
	// WorldFrame is the frame of the world its desync report recorded
	// (see ReplaySide.Recorded), or -1.
	WorldFrame int64   `json:"world_frame"`
	Changes    []Event `json:"changes"`
	// RestoredFrames are the frames at which its desync report holds
	// states that were restored (see ReplaySide.Restored): the last agreed
	// checkpoint and the divergent frame.
	RestoredFrames []int64 `json:"restored_frames"`
}

// Divergence is where two replays first disagree.
type Divergence struct {
	A, B int // the files compared (indexes in Files)
	// Frame is the first frame whose recorded state hashes differ (a
	// checkpoint; the states diverged after LastAgreed and at or before
	// it), or whose buckets differ, whichever comes first; Section is the
	// first section whose hashes differ there.
	Frame      int64  `json:"frame"`
	Section    string `json:"section,omitempty"`
	LastAgreed int64  `json:"last_agreed"` // the last checkpoint both agree on, or -1
	// InputsFrame is the first frame whose buckets differ, or -1 when
	// every bucket both hold agrees (the states diverged with the same
	// commands).
	InputsFrame int64  `json:"inputs_frame"`
	Text        string `json:"text"`
}

// ReplayFrame is one frame of every replay, as the page shows it.
type ReplayFrame struct {
	Frame int64        `json:"frame"`
	Sides []ReplaySide `json:"sides"`
	// Pending is set when some side's world is not yet the one after
	// Frame but an earlier one (that side's At): the re-run that checks
	// the replays has not yet got near Frame, and a seek does not re-run
	// the way there itself meanwhile. Asked again once the check has got
	// there, the frame comes whole.
	Pending bool `json:"pending,omitempty"`
}

// ReplaySide is one replay at a frame.
type ReplaySide struct {
	// Scene is the world after the frame, re-run from the replay's
	// buckets; nil when the simulation is not Drawable or the replay is
	// shorter.
	Scene    *Scene          `json:"scene,omitempty"`
	Commands []ReplayCommand `json:"commands"`
	// Hash is the re-run's state hash after the frame.
	Hash string `json:"hash"`
	// At is the frame the world (Scene, Hash) is after: the frame asked
	// for, or an earlier one while the frame is pending (see
	// ReplayFrame.Pending); -1 for the world before frame 0.
	At int64 `json:"at"`
	// Checkpoint is the newest checkpoint recorded at or before the frame.
	Checkpoint *ReplayCheckpoint `json:"checkpoint,omitempty"`
	// Diff lists what differs from the first replay's world: units on one
	// side only and units at another position or with other hit points.
	Diff []UnitDiff `json:"diff"`
	// Recorded is the world the replay's member had at this frame, from
	// its desync report, when the report holds one for this frame;
	// RecordedDiff lists what differs in it from the re-run world (Scene).
	Recorded     *Scene     `json:"recorded,omitempty"`
	RecordedDiff []UnitDiff `json:"recorded_diff,omitempty"`
	// Restored are the states the replay's desync report holds for this
	// frame, restored: its member's and the member it compared with, side
	// by side; nil when the report holds none for the frame.
	Restored *RestoredPair `json:"restored,omitempty"`
}

// RestoredPair is two members' states after one frame, restored from a
// desync report, and what differs between them.
type RestoredPair struct {
	Frame int64  `json:"frame"`
	Role  string `json:"role"` // "last agreed checkpoint" or "divergent frame"
	// Worlds are the reporting member's state first, then the other
	// side's (when the report holds it).
	Worlds []RestoredWorld `json:"worlds"`
	// Section is the first section whose hashes differ between the two;
	// Diff lists the units of the second world that differ from the
	// first's.
	Section string     `json:"section,omitempty"`
	Diff    []UnitDiff `json:"diff"`
}

// RestoredWorld is one member's state restored from a desync report.
type RestoredWorld struct {
	Member   int           `json:"member"`
	Hash     string        `json:"hash"` // the restored simulation's state hash
	Scene    *Scene        `json:"scene,omitempty"`
	Sections []SectionHash `json:"sections"`
	// Error says why the state could not be restored, or that its hash is
	// not the one the report recorded.
	Error string `json:"error,omitempty"`
}

// ReplayCommand is one command of a bucket.
type ReplayCommand struct {
	Slot int    `json:"slot"`
	Seq  uint32 `json:"seq"`
	Text string `json:"text"`
}

// ReplayCheckpoint is a recorded state hash with its sections.
type ReplayCheckpoint struct {
	Frame    int64         `json:"frame"`
	Hash     string        `json:"hash"`
	Sections []SectionHash `json:"sections"`
}

// SectionHash is one section's recorded hash.
type SectionHash struct {
	Name string `json:"name"`
	Hash string `json:"hash"`
}

// UnitDiff is one unit that differs between the first replay's world and
// another's.
type UnitDiff struct {
	ID   uint32 `json:"i"`
	What string `json:"what"` // "only here", "missing here", "moved", "hp"
}
