package replay

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/rng"
)

// testSim is a simulation whose state is every input it stepped, folded
// into three sections, so that any change of a bucket changes its hash.
type testSim struct {
	frame  bucket.Frame
	inputs uint64
	count  uint64
}

func (s *testSim) Step(frame bucket.Frame, cmds []bucket.Command) {
	s.frame = frame
	for _, c := range cmds {
		s.count++
		s.inputs = s.inputs*1099511628211 ^ uint64(c.Slot)<<32 ^ uint64(c.Seq)
		for _, b := range c.Payload {
			s.inputs = (s.inputs ^ uint64(b)) * 1099511628211
		}
	}
}

func (s *testSim) Hash() uint64 {
	return uint64(s.frame)*0x9e3779b97f4a7c15 ^ s.inputs ^ s.count<<7
}

func (s *testSim) SectionHashes(dst []lockstep.Section) []lockstep.Section {
	return append(dst,
		lockstep.Section{Name: "frame", Hash: uint64(s.frame)},
		lockstep.Section{Name: "inputs", Hash: s.inputs},
		lockstep.Section{Name: "count", Hash: s.count})
}

const testSimName, testSimVersion = "test", "3"

func testFactory(h Header) (lockstep.Simulation, error) {
	if err := h.CheckSim(testSimName, testSimVersion); err != nil {
		return nil, err
	}
	return &testSim{frame: -1}, nil
}

// newTestWriter returns a Writer of testHeader(members) and the buffer it
// writes to.
func newTestWriter(t testing.TB, members int) (*Writer, *bytes.Buffer) {
	t.Helper()
	buf := new(bytes.Buffer)
	w, err := NewWriter(buf, testHeader(members))
	if err != nil {
		t.Fatal(err)
	}
	return w, buf
}

func testHeader(members int) Header {
	h := Header{
		Session:     []byte{0x12, 0x34},
		FrameLength: 50 * time.Millisecond,
		SimName:     testSimName,
		SimVersion:  testSimVersion,
		SimConfig:   []byte("config"),
		Seed:        rng.SeedFromUint64(7),
	}
	for i := range members {
		h.Members = append(h.Members, "member-"+string(rune('a'+i)))
	}
	return h
}

// session describes a synthetic recording.
type session struct {
	members  int
	frames   int
	seed     uint64
	compress bool
	flushes  bool // flush at random frames besides the automatic flushes
	changes  bool // record membership changes
	longRuns bool // include runs of more than 128 and 1000 empty frames
	close    bool // write the trailer
}

// record writes the session and returns the file and every record a reader
// must return, with the trailer last if the session is closed.
func (s session) record(t testing.TB) ([]byte, []Record) {
	t.Helper()
	w, buf := newTestWriter(t, s.members)
	w.SetCompression(s.compress)
	r := rng.New(s.seed, 1)
	sim := &testSim{frame: -1}
	seqs := make([]uint32, s.members)
	var want []Record
	for f := range bucket.Frame(s.frames) {
		var cmds []bucket.Command
		quiet := s.longRuns && (f > 50 && f < 250 || f > 300 && f < 1400)
		if !quiet && r.IntN(3) == 0 {
			for slot := range s.members {
				for range r.IntN(3) - 1 + r.IntN(2) {
					seqs[slot] += uint32(r.IntN(2)) // sequence gaps happen when commands are dropped
					p := make([]byte, r.IntN(40))
					for i := range p {
						p[i] = byte(r.IntN(256))
					}
					cmds = append(cmds, bucket.Command{Slot: bucket.Slot(slot), Seq: seqs[slot], Frame: f, Payload: p})
					seqs[slot]++
				}
			}
		}
		sim.Step(f, cmds)
		if err := w.Record(lockstep.Bucket{Frame: f, Commands: cmds}, sim); err != nil {
			t.Fatal(err)
		}
		want = append(want, Record{Kind: KindFrame, Frame: f, Commands: cmds})
		if f%DefaultHashInterval == 0 {
			want = append(want, Record{Kind: KindCheckpoint, Frame: f, Hash: sim.Hash(), Sections: sim.SectionHashes(nil)})
		}
		if s.changes && r.IntN(97) == 0 {
			c := Change{Kind: ChangeKind(1 + r.IntN(2)), Frame: f + 3, Member: bucket.Slot(r.IntN(s.members)), LastFrame: f - 1, Detail: "silent"}
			if err := w.Membership(c); err != nil {
				t.Fatal(err)
			}
			want = append(want, Record{Kind: KindChange, Frame: c.Frame, Change: c})
		}
		if s.flushes && r.IntN(7) == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s.close {
		if err := w.Close(bucket.Frame(s.frames-1), sim.Hash(), EndCompleted); err != nil {
			t.Fatal(err)
		}
		want = append(want, Record{Kind: KindEnd, Frame: bucket.Frame(s.frames - 1), Trailer: Trailer{
			Reason: EndCompleted, Chunks: w.chunks, LastFrame: bucket.Frame(s.frames - 1), FinalHash: sim.Hash(), Offset: int64(buf.Len()) - TrailerSize,
		}})
	} else if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), want
}

// writeTemp writes data to a file name in a directory of the test's own
// and returns its path.
func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readAll reads every record of data, deep-copied, and the error that
// ended the reading (nil at a clean end).
func readAll(data []byte) (Header, []Record, error) {
	rd, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return Header{}, nil, err
	}
	var out []Record
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return rd.Header(), out, nil
		}
		if err != nil {
			return rd.Header(), out, err
		}
		out = append(out, rec.Clone())
	}
}

func equalRecords(a, b Record) bool {
	if a.Kind != b.Kind || a.Frame != b.Frame || a.Hash != b.Hash || a.Change != b.Change || a.Trailer != b.Trailer ||
		!slices.Equal(a.Sections, b.Sections) || len(a.Commands) != len(b.Commands) {
		return false
	}
	for i, c := range a.Commands {
		d := b.Commands[i]
		if c.Slot != d.Slot || c.Seq != d.Seq || c.Frame != d.Frame || !bytes.Equal(c.Payload, d.Payload) {
			return false
		}
	}
	return true
}

// checkPrefix checks that got is a prefix of want.
func checkPrefix(t *testing.T, got, want []Record) {
	t.Helper()
	if len(got) > len(want) {
		t.Fatalf("read %d records, only %d recorded", len(got), len(want))
	}
	for i := range got {
		if !equalRecords(got[i], want[i]) {
			t.Fatalf("record %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// chunkSpan is a chunk's place in a file and the frames it completes.
type chunkSpan struct {
	at, end int64
	frames  int // frames delivered once the chunk is read (all chunks up to it)
	records int // records delivered once the chunk is read
}

// chunkSpans walks the chunks of a valid file and returns their spans.
func chunkSpans(t *testing.T, data []byte) (spans []chunkSpan, headerEnd int64) {
	t.Helper()
	rd, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	headerEnd = rd.Offset()
	frames, records, chunks := 0, 0, 0
	for {
		before := rd.Chunks()
		rec, err := rd.Next()
		if rd.Chunks() != before {
			spans = append(spans, chunkSpan{at: rd.chunkAt, end: rd.Offset(), frames: frames, records: records})
			chunks++
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Kind == KindFrame {
			frames++
		}
		records++
		if rec.Kind == KindEnd {
			continue
		}
		// Records of the chunk just read count for it.
		if chunks > 0 {
			spans[chunks-1].frames, spans[chunks-1].records = frames, records
		}
	}
	return spans, headerEnd
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}
