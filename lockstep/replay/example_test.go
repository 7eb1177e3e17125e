package replay_test

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
)

// counter is a tiny simulation: its state counts commands and their bytes.
type counter struct{ commands, bytes uint64 }

func (c *counter) Step(_ bucket.Frame, cmds []bucket.Command) {
	for _, cmd := range cmds {
		c.commands++
		c.bytes += uint64(len(cmd.Payload))
	}
}

func (c *counter) Hash() uint64 { return c.commands<<32 | c.bytes }

// A member records each bucket it steps with Record, which also writes a
// checkpoint every HashInterval frames, and closes the file at the end.
// Verify re-runs the file with a fresh simulation.
func Example() {
	var file bytes.Buffer
	w, err := replay.NewWriter(&file, replay.Header{
		FrameLength: 50 * time.Millisecond,
		SimName:     "counter",
		SimVersion:  "1",
		Members:     []string{"alice", "bob"},
	})
	if err != nil {
		panic(err)
	}
	sim := &counter{}
	for f := range bucket.Frame(60) {
		var cmds []bucket.Command
		if f == 30 {
			cmds = []bucket.Command{{Slot: 1, Seq: 0, Frame: f, Payload: []byte("attack")}}
		}
		sim.Step(f, cmds)
		if err := w.Record(lockstep.Bucket{Frame: f, Commands: cmds}, sim); err != nil {
			panic(err)
		}
	}
	if err := w.Close(59, sim.Hash(), replay.EndCompleted); err != nil {
		panic(err)
	}

	rd, err := replay.NewReader(bytes.NewReader(file.Bytes()))
	if err != nil {
		panic(err)
	}
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		switch {
		case rec.Kind == replay.KindFrame && len(rec.Commands) > 0:
			fmt.Printf("frame %d: %q from member %d\n", rec.Frame, rec.Commands[0].Payload, rec.Commands[0].Slot)
		case rec.Kind == replay.KindEnd:
			fmt.Printf("end: %s at frame %d\n", rec.Trailer.Reason, rec.Trailer.LastFrame)
		}
	}

	res, err := replay.Verify(bytes.NewReader(file.Bytes()), func(h replay.Header) (lockstep.Simulation, error) {
		if err := h.CheckSim("counter", "1"); err != nil {
			return nil, err
		}
		return &counter{}, nil
	}, nil)
	fmt.Printf("verified %d frames, %d checkpoints: %v\n", res.Frames, res.Checkpoints, err)
	// Output:
	// frame 30: "attack" from member 1
	// end: completed at frame 59
	// verified 60 frames, 3 checkpoints: <nil>
}
