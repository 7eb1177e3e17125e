// Package replayview opens replay files for the page of package view: it
// re-runs each with the simulation it was recorded with, answers the
// page's questions about any frame (the worlds, the commands of the
// bucket, the checkpoints), and given replays of one session that
// diverged finds the first divergent frame and section, and what differs
// between the worlds.
package replayview
