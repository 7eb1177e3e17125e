package replay

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// runFile returns a complete file of one member whose only chunk records
// one run of n empty frames (the 0x01 record), and whose trailer says the
// last frame is last.
func runFile(t *testing.T, n uint64, last bucket.Frame) []byte {
	t.Helper()
	h := testHeader(1)
	h.SimConfig = nil
	payload := binary.AppendUvarint([]byte{0, recSkipLong}, n)
	data := withChunkHeader(t, h, payload)
	return appendTrailer(data, Trailer{Reason: EndCompleted, Chunks: 1, LastFrame: last, Offset: int64(len(data))})
}

// withChunkHeader is withChunk for header h, without flags.
func withChunkHeader(t *testing.T, h Header, payload []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := NewWriter(&buf, h); err != nil {
		t.Fatal(err)
	}
	b := append(buf.Bytes(), blockChunk, 0)
	head := len(b) - 2
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc(b[head:]))
	b = binary.LittleEndian.AppendUint32(b, crc(payload))
	return append(b, payload...)
}

// stepCounter counts the frames Verify steps.
type stepCounter struct{ frames int }

func (s *stepCounter) Step(bucket.Frame, []bucket.Command) { s.frames++ }
func (s *stepCounter) Hash() uint64                        { return 0 }

// TestReplayBomb: a file of a few bytes holding one run of 10^12 empty
// frames, whose trailer agrees, is refused as malformed before a single
// frame is delivered or stepped, by the streaming reader, by Verify and
// through OpenFile.
func TestReplayBomb(t *testing.T) {
	const n = 1_000_000_000_000
	bomb := runFile(t, n, n-1)
	t.Logf("the bomb is %d bytes", len(bomb))
	if len(bomb) > 170 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	_, recs, err := readAll(bomb)
	wantErr(t, err, ErrMalformed)
	if len(recs) != 0 || !strings.Contains(err.Error(), "more than 65536 frames") {
		t.Errorf("%d records, error %v", len(recs), err)
	}

	var sim stepCounter
	res, err := Verify(bytes.NewReader(bomb), func(Header) (lockstep.Simulation, error) { return &sim, nil }, nil)
	wantErr(t, err, ErrMalformed)
	if sim.frames != 0 || res.Frames != 0 {
		t.Errorf("stepped %d frames (result %d)", sim.frames, res.Frames)
	}

	path := writeTemp(t, "bomb.phx", bomb)
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if rec, err := f.Next(); !errors.Is(err, ErrMalformed) {
		t.Errorf("OpenFile: Next = %+v, %v", rec, err)
	}
}

// TestRunsBounded: a chunk may record MaxChunkFrames frames, not one more;
// and where the trailer can be read from the end of the file, a run that
// reaches past its last frame is refused before any of its frames is
// delivered, while the streaming reader alone notices only at the trailer.
func TestRunsBounded(t *testing.T) {
	for _, tt := range []struct {
		n    uint64
		last bucket.Frame
		ok   bool
	}{
		{MaxChunkFrames, MaxChunkFrames - 1, true},
		{MaxChunkFrames + 1, MaxChunkFrames, false},
	} {
		_, recs, err := readAll(runFile(t, tt.n, tt.last))
		if tt.ok && (err != nil || len(recs) != int(tt.n)+1) {
			t.Errorf("run of %d: %d records, %v", tt.n, len(recs), err)
		}
		if !tt.ok && (!errors.Is(err, ErrMalformed) || len(recs) != 0) {
			t.Errorf("run of %d: %d records, %v; want ErrMalformed and none", tt.n, len(recs), err)
		}
	}

	long := runFile(t, 1000, 9) // the trailer says 10 frames
	_, recs, err := readAll(long)
	wantErr(t, err, ErrMalformed)
	if len(recs) != 1000 {
		t.Errorf("streaming: %d records before the error, want 1000", len(recs))
	}
	var sim stepCounter
	_, err = Verify(bytes.NewReader(long), func(Header) (lockstep.Simulation, error) { return &sim, nil }, nil)
	wantErr(t, err, ErrMalformed)
	if sim.frames != 0 || !strings.Contains(err.Error(), "after the trailer's last frame 9") {
		t.Errorf("Verify stepped %d frames: %v", sim.frames, err)
	}

	// The writer never writes a longer chunk.
	w, buf := newTestWriter(t, 1)
	w.SetFlushFrames(1 << 30)
	for f := range bucket.Frame(MaxChunkFrames + 10) {
		if err := w.Step(f, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(MaxChunkFrames+9, 0, EndCompleted); err != nil {
		t.Fatal(err)
	}
	if _, recs, err := readAll(buf.Bytes()); err != nil || len(recs) != MaxChunkFrames+11 {
		t.Errorf("writer's file: %d records, %v", len(recs), err)
	}
}
