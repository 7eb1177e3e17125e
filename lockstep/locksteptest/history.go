package locksteptest

import "github.com/phalanx-net/phalanx/bucket"

// historyWindow is how many of its newest frames' hashes the harness keeps
// per member to compare with the other members' as they step the same
// frames: 16 bytes a frame, 64 KiB a member. Members whose progress drifts
// further apart than this cannot be compared frame by frame; such a frame
// counts as a difference (see history.step).
const historyWindow = 4096

// frameHashes is the input and state hash of one stepped frame.
type frameHashes struct{ input, state uint64 }

// history compares the members' histories frame by frame as they step,
// keeping only a window of each member's newest frames: for every pair of
// members, the first frame whose buckets or state differ.
type history struct {
	// recent[m][f%historyWindow] are member m's hashes of frame f, for
	// its newest historyWindow frames: bounded by configuration.
	recent [][]frameHashes
	// stepped[m] is the newest frame member m stepped, or -1; from[m] the
	// first frame it stepped since it last joined (0 for the members that
	// started the run).
	stepped []bucket.Frame
	from    []bucket.Frame
	// diff[a][b] is the first frame where members a and b differ, or -1:
	// members squared, bounded by configuration.
	diff [][]bucket.Frame
}

func newHistory(members int) *history {
	h := &history{recent: make([][]frameHashes, members), stepped: make([]bucket.Frame, members), from: make([]bucket.Frame, members), diff: make([][]bucket.Frame, members)}
	for m := range members {
		h.recent[m] = make([]frameHashes, historyWindow)
		h.stepped[m] = -1
		h.diff[m] = make([]bucket.Frame, members)
		for o := range members {
			h.diff[m][o] = -1
		}
	}
	return h
}

// step records that member m stepped frame f (the frame after its
// previous one) with these hashes, and compares them with every other
// member's that stepped f already. A member that stepped f so long ago
// that its hashes of f left the window counts as differing at f.
func (h *history) step(m bucket.Slot, f bucket.Frame, fh frameHashes) {
	h.recent[m][int(f)%historyWindow] = fh
	h.stepped[m] = f
	for o := range h.recent {
		if bucket.Slot(o) == m || h.stepped[o] < f || f < h.from[o] {
			continue // o compares when it steps f, or (a joiner) never steps it
		}
		if h.stepped[o]-f >= historyWindow || h.recent[o][int(f)%historyWindow] != fh {
			h.differ(m, bucket.Slot(o), f)
		}
	}
}

// stateOf returns the state hash after frame f of a member that stepped
// it and still holds it in its window.
func (h *history) stateOf(f bucket.Frame) (uint64, bool) {
	for m, s := range h.stepped {
		if s >= f && s-f < historyWindow {
			return h.recent[m][int(f)%historyWindow].state, true
		}
	}
	return 0, false
}

// joined records that member m, having joined, steps frames from f on:
// frames before it it caught up on apart from the history.
func (h *history) joined(m bucket.Slot, f bucket.Frame) { h.from[m] = f }

func (h *history) differ(a, b bucket.Slot, f bucket.Frame) {
	if d := h.diff[a][b]; d < 0 || f < d {
		h.diff[a][b], h.diff[b][a] = f, f
	}
}

// same reports whether members a and b stepped the same buckets and
// reached the same states on frames 0..n-1, and if not, the first frame
// that differs.
func (h *history) same(a, b bucket.Slot, n int) (bool, bucket.Frame) {
	if d := h.diff[a][b]; d >= 0 && d < bucket.Frame(n) {
		return false, d
	}
	return true, -1
}
