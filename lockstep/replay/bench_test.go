package replay

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/rng"
)

// hourFrames is one hour at 20 Hz.
const hourFrames = 72000

// syntheticHour records an hour of 8 members issuing commands at the rts
// generator's rate (about 70 a minute each, 20-byte payloads shaped like rts
// commands: a kind, a count, a unit ID, zero gaps, a target) with
// checkpoints of 5 sections every 20 frames, one chunk a second. No
// simulation runs: the hashes are random.
func syntheticHour(b *testing.B) []byte {
	b.Helper()
	h := testHeader(8)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	if err != nil {
		b.Fatal(err)
	}
	r := rng.New(1, 2)
	seqs := make([]uint32, 8)
	sections := make([]lockstep.Section, 5)
	for i, name := range []string{"frame", "map", "units", "rng", "players"} {
		sections[i].Name = name
	}
	var cmds []bucket.Command
	for f := range bucket.Frame(hourFrames) {
		cmds = cmds[:0]
		for slot := range 8 {
			if r.IntN(1000) < 58 { // 70 a minute at 20 Hz
				n := 10 + r.IntN(11)
				p := []byte{byte(1 + r.IntN(4)), byte(n)}
				p = append(p, byte(r.IntN(128)), byte(r.IntN(13)))
				p = append(p, make([]byte, n-1)...)
				p = append(p, byte(r.IntN(128)), byte(r.IntN(128)))
				cmds = append(cmds, bucket.Command{Slot: bucket.Slot(slot), Seq: seqs[slot], Frame: f, Payload: p})
				seqs[slot]++
			}
		}
		if err := w.Step(f, cmds); err != nil {
			b.Fatal(err)
		}
		if f%DefaultHashInterval == 0 {
			for i := range sections {
				sections[i].Hash = r.Uint64()
			}
			if err := w.Checkpoint(f, r.Uint64(), sections); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Close(hourFrames-1, 0, EndCompleted); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkRead reads a synthetic one-hour, 8-member replay without a
// simulation: decompression, checksums and decoding.
func BenchmarkRead(b *testing.B) {
	data := syntheticHour(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	start := time.Now()
	n := 0
	for b.Loop() {
		rd, err := NewReader(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n*hourFrames), "ns/frame")
	b.ReportMetric(float64(len(data))/(1<<20), "MiB/hour")
}

// BenchmarkWrite records one frame with the synthetic hour's command rate
// and checkpoints, into io.Discard.
func BenchmarkWrite(b *testing.B) {
	w, err := NewWriter(io.Discard, testHeader(8))
	if err != nil {
		b.Fatal(err)
	}
	p := make([]byte, 20)
	p[0], p[1] = 1, 18
	cmds := []bucket.Command{{Slot: 3, Payload: p}}
	var sections []lockstep.Section
	for i, name := range []string{"frame", "map", "units", "rng", "players"} {
		sections = append(sections, lockstep.Section{Name: name, Hash: uint64(i)})
	}
	b.ReportAllocs()
	f := bucket.Frame(0)
	for b.Loop() {
		var c []bucket.Command
		if f%3 == 0 {
			cmds[0].Seq = uint32(f)
			c = cmds
		}
		if err := w.Step(f, c); err != nil {
			b.Fatal(err)
		}
		if f%DefaultHashInterval == 0 {
			if err := w.Checkpoint(f, uint64(f), sections); err != nil {
				b.Fatal(err)
			}
		}
		f++
	}
}
