package replay

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		s    session
	}{
		{"compressed", session{members: 4, frames: 700, seed: 1, compress: true, flushes: true, changes: true, close: true}},
		{"plain", session{members: 4, frames: 700, seed: 2, flushes: true, changes: true, close: true}},
		{"long empty runs", session{members: 2, frames: 1500, seed: 3, compress: true, longRuns: true, close: true}},
		{"one member", session{members: 1, frames: 90, seed: 4, close: true}},
		{"64 members", session{members: 64, frames: 60, seed: 5, compress: true, close: true}},
		{"no trailer", session{members: 3, frames: 200, seed: 6, compress: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, want := tt.s.record(t)
			h, got, err := readAll(data)
			if tt.s.close && err != nil {
				t.Fatal(err)
			}
			if !tt.s.close {
				wantErr(t, err, ErrTruncated)
			}
			if len(got) != len(want) {
				t.Fatalf("read %d records, recorded %d", len(got), len(want))
			}
			checkPrefix(t, got, want)
			wh := testHeader(tt.s.members)
			wh.Version, wh.Engine, wh.HashInterval = FormatVersion, EngineVersion, DefaultHashInterval
			if !reflect.DeepEqual(h, wh) {
				t.Errorf("header %+v, want %+v", h, wh)
			}
		})
	}
}

// Appending the records a Reader returns to a Writer of the same header
// records them again; a record of no known kind is refused.
func TestAppendCopiesARecording(t *testing.T) {
	data, want := session{members: 4, frames: 300, seed: 7, changes: true, close: true}.record(t)
	h, recs, err := readAll(data)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(Record{Kind: KindStatement + 1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Append of an unknown kind: %v", err)
	}
	for _, r := range recs {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	_, again, err := readAll(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(want) {
		t.Fatalf("read %d records again, recorded %d", len(again), len(want))
	}
	for _, r := range []*Record{&again[len(again)-1], &want[len(want)-1]} {
		r.Trailer.Chunks, r.Trailer.Offset = 0, 0 // where the chunks end is the writer's
	}
	checkPrefix(t, again, want)
}

// A clone shares no memory with the record it copies.
func TestRecordClone(t *testing.T) {
	r := Record{Kind: KindFrame, Commands: []bucket.Command{{Slot: 1, Payload: []byte{1, 2}}},
		Sections: []lockstep.Section{{Name: "units", Hash: 5}}, Statement: Statement{Signature: []byte{9}}}
	c := r.Clone()
	r.Commands[0].Payload[0], r.Commands[0].Slot, r.Sections[0].Hash, r.Statement.Signature[0] = 7, 2, 6, 8
	if c.Commands[0].Payload[0] != 1 || c.Commands[0].Slot != 1 || c.Sections[0].Hash != 5 || c.Statement.Signature[0] != 9 {
		t.Fatalf("the clone changed with the record: %+v", c)
	}
	if empty := (&Record{}).Clone(); empty.Commands != nil || empty.Sections != nil || empty.Statement.Signature != nil {
		t.Fatalf("a clone of an empty record is not empty: %+v", empty)
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	h := testHeader(3)
	h.Engine, h.HashInterval, h.Self, h.SimConfig = "engine x", 7, 2, nil
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(-1, 42, EndClosedEarly); err != nil {
		t.Fatal(err)
	}
	got, recs, err := readAll(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	h.Version = FormatVersion
	if !reflect.DeepEqual(got, h) {
		t.Errorf("header %+v, want %+v", got, h)
	}
	want := Trailer{Reason: EndClosedEarly, LastFrame: -1, FinalHash: 42, Offset: int64(buf.Len() - TrailerSize)}
	if len(recs) != 1 || recs[0].Kind != KindEnd || recs[0].Trailer != want {
		t.Errorf("records %+v, want only the trailer %+v", recs, want)
	}
	tr, err := ReadTrailer(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || tr != want {
		t.Errorf("ReadTrailer = %+v, %v; want %+v", tr, err, want)
	}
}

func TestWriterRefusesBadHeaders(t *testing.T) {
	long := strings.Repeat("x", 256)
	tests := map[string]func(h *Header){
		"no members":       func(h *Header) { h.Members = nil },
		"65 members":       func(h *Header) { h.Members = make([]string, 65) },
		"self":             func(h *Header) { h.Self = 3 },
		"no sim name":      func(h *Header) { h.SimName = "" },
		"long sim version": func(h *Header) { h.SimVersion = long },
		"long member id":   func(h *Header) { h.Members[1] = long },
		"frame length":     func(h *Header) { h.FrameLength = 0 },
		"hash interval":    func(h *Header) { h.HashInterval = -1 },
		"sim config":       func(h *Header) { h.SimConfig = make([]byte, 65<<10) },
	}
	for name, change := range tests {
		h := testHeader(3)
		change(&h)
		if _, err := NewWriter(io.Discard, h); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v, want ErrInvalid", name, err)
		}
	}
}

func TestWriterRefusesBadRecords(t *testing.T) {
	cmd := func(slot bucket.Slot, seq uint32) bucket.Command {
		return bucket.Command{Slot: slot, Seq: seq, Payload: []byte{1}}
	}
	tests := map[string]func(w *Writer) error{
		"first frame 1":       func(w *Writer) error { return w.Step(1, nil) },
		"frame repeated":      func(w *Writer) error { w.Step(0, nil); return w.Step(0, nil) },
		"slot beyond members": func(w *Writer) error { return w.Step(0, []bucket.Command{cmd(2, 0)}) },
		"slots out of order":  func(w *Writer) error { return w.Step(0, []bucket.Command{cmd(1, 0), cmd(0, 0)}) },
		"sequence repeated":   func(w *Writer) error { return w.Step(0, []bucket.Command{cmd(0, 0), cmd(0, 0)}) },
		"sequence goes back": func(w *Writer) error {
			w.Step(0, []bucket.Command{cmd(0, 5)})
			return w.Step(1, []bucket.Command{cmd(0, 4)})
		},
		"checkpoint before frame": func(w *Writer) error { return w.Checkpoint(0, 1, nil) },
		"checkpoint of old frame": func(w *Writer) error { w.Step(0, nil); w.Step(1, nil); return w.Checkpoint(0, 1, nil) },
		"change of slot 2":        func(w *Writer) error { return w.Membership(Change{Kind: ChangeDrop, Member: 2}) },
		"change of kind 9":        func(w *Writer) error { return w.Membership(Change{Kind: 9}) },
		"close at wrong frame":    func(w *Writer) error { w.Step(0, nil); return w.Close(5, 0, EndCompleted) },
		"step after close":        func(w *Writer) error { w.Close(-1, 0, EndCompleted); return w.Step(0, nil) },
	}
	for name, misuse := range tests {
		w, err := NewWriter(io.Discard, testHeader(2))
		if err != nil {
			t.Fatal(err)
		}
		if err := misuse(w); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v, want ErrInvalid", name, err)
		}
	}
}

// failingWriter fails after n bytes.
type failingWriter struct{ n int }

func (f *failingWriter) Write(b []byte) (int, error) {
	if len(b) > f.n {
		return 0, errors.New("disk full")
	}
	f.n -= len(b)
	return len(b), nil
}

func TestWriterErrorIsSticky(t *testing.T) {
	w, err := NewWriter(&failingWriter{n: 200}, testHeader(2))
	if err != nil {
		t.Fatal(err)
	}
	var first error
	for f := range bucket.Frame(1000) {
		if err := w.Step(f, []bucket.Command{{Slot: 0, Seq: uint32(f), Payload: make([]byte, 30)}}); err != nil {
			first = err
			break
		}
	}
	if first == nil || !strings.Contains(first.Error(), "disk full") {
		t.Fatalf("error %v, want the writer's", first)
	}
	if err := w.Close(w.next-1, 0, EndCompleted); err != first {
		t.Errorf("Close = %v, want the first error", err)
	}
}

// TestFlushMakesFramesReadable checks the crash guarantee: what was flushed
// is readable although the file has no trailer.
func TestFlushMakesFramesReadable(t *testing.T) {
	w, buf := newTestWriter(t, 2)
	w.SetFlushFrames(1000)
	for f := range bucket.Frame(10) {
		w.Step(f, nil)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	w.Step(10, []bucket.Command{{Slot: 1, Payload: []byte("lost")}}) // never flushed: a crash
	_, recs, err := readAll(buf.Bytes())
	wantErr(t, err, ErrTruncated)
	if len(recs) != 10 || recs[9].Frame != 9 {
		t.Fatalf("read %d records, want the 10 flushed frames", len(recs))
	}
	if !strings.Contains(err.Error(), "last good frame 9") {
		t.Errorf("error %q does not name the last good frame", err)
	}
}

func TestAutomaticFlush(t *testing.T) {
	w, buf := newTestWriter(t, 2)
	for f := range bucket.Frame(DefaultFlushFrames + 1) {
		w.Step(f, nil)
	}
	// Frame DefaultFlushFrames made the writer write the first
	// DefaultFlushFrames frames.
	_, recs, err := readAll(buf.Bytes())
	wantErr(t, err, ErrTruncated)
	if len(recs) != DefaultFlushFrames {
		t.Fatalf("read %d frames, want %d", len(recs), DefaultFlushFrames)
	}
}

func TestEmptyRunsAreCheap(t *testing.T) {
	size := func(frames int) int {
		var buf bytes.Buffer
		w, _ := NewWriter(&buf, testHeader(2))
		w.SetFlushFrames(1 << 30)
		for f := range bucket.Frame(frames) {
			w.Step(f, nil)
		}
		w.Close(bucket.Frame(frames-1), 0, EndCompleted)
		return buf.Len()
	}
	base := size(1)
	for _, frames := range []int{128, 129, 16000} {
		if extra := size(frames) - base; extra > 3 {
			t.Errorf("%d empty frames cost %d bytes more than one", frames, extra)
		}
	}
}

func TestBadMagic(t *testing.T) {
	tests := map[string]string{
		"text":  "hello, world: this is not a replay",
		"gzip":  "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03 some more bytes",
		"other": "PHXREPLAZ\x01\x00 and so on and so forth",
	}
	for name, data := range tests {
		_, err := NewReader(strings.NewReader(data))
		wantErr(t, err, ErrBadMagic)
		if !strings.Contains(err.Error(), "it starts with") || !strings.Contains(err.Error(), `"PHXREPLAY"`) {
			t.Errorf("%s: error %q does not say what the file starts with and what a replay does", name, err)
		}
	}
	_, err := NewReader(strings.NewReader("\x1f\x8b\x08\x00 gz"))
	if !strings.Contains(err.Error(), "gzip") {
		t.Errorf("error %q does not recognise gzip", err)
	}
	_, err = NewReader(strings.NewReader(""))
	wantErr(t, err, ErrTruncated)
	if !strings.Contains(err.Error(), "empty") {
		t.Errorf("error %q does not say the file is empty", err)
	}
}

// setVersion rewrites the format version of a file and its prefix CRC, as
// a newer writer would have written it.
func setVersion(data []byte, v uint16) []byte {
	d := bytes.Clone(data)
	binary.LittleEndian.PutUint16(d[9:], v)
	binary.LittleEndian.PutUint32(d[15:], crc(d[:15]))
	return d
}

func TestNewerVersionRefused(t *testing.T) {
	data, _ := session{members: 2, frames: 30, seed: 1, close: true}.record(t)
	_, err := NewReader(bytes.NewReader(setVersion(data, FormatVersion+1)))
	wantErr(t, err, ErrVersion)
	if !strings.Contains(err.Error(), fmt.Sprintf("format version %d", FormatVersion+1)) || !strings.Contains(err.Error(), fmt.Sprintf("supports versions 1 to %d", FormatVersion)) {
		t.Errorf("error %q does not name the file's and the supported versions", err)
	}
	_, err = NewReader(bytes.NewReader(setVersion(data, 0)))
	wantErr(t, err, ErrVersion)
}

// TestTruncated cuts a file at every offset: the reader returns exactly the
// records of the whole chunks before the cut, then ErrTruncated naming the
// offset and the last good frame.
func TestTruncated(t *testing.T) {
	data, want := session{members: 3, frames: 300, seed: 9, compress: true, flushes: true, changes: true, close: true}.record(t)
	spans, headerEnd := chunkSpans(t, data)
	if len(data) > 20000 {
		t.Fatalf("test file of %d bytes: make it smaller", len(data))
	}
	for cut := range int64(len(data)) {
		_, got, err := readAll(data[:cut])
		wantErr(t, err, ErrTruncated)
		if cut < headerEnd {
			continue
		}
		checkPrefix(t, got, want)
		frames, records := 0, 0
		for _, s := range spans {
			if s.end <= cut {
				frames, records = s.frames, s.records
			}
		}
		if len(got) != records {
			t.Fatalf("cut at %d: read %d records, want %d (of the whole chunks before the cut)", cut, len(got), records)
		}
		msg := err.Error()
		good := "no frame read"
		if frames > 0 {
			good = "last good frame " + strconv.Itoa(frames-1)
		}
		if !strings.Contains(msg, good) || !strings.Contains(msg, "byte "+strconv.Itoa(int(cut))) {
			t.Fatalf("cut at %d: error %q does not name byte %d and %q", cut, msg, cut, good)
		}
	}
}

// TestFlippedByte flips each byte of a file: the reader returns the records
// of the whole chunks before the damaged one, then an error naming it.
func TestFlippedByte(t *testing.T) {
	data, want := session{members: 3, frames: 300, seed: 10, compress: true, flushes: true, changes: true, close: true}.record(t)
	spans, headerEnd := chunkSpans(t, data)
	t.Logf("%d bytes in %d chunks", len(data), len(spans))
	trailerAt := int64(len(data) - TrailerSize)
	for at := range int64(len(data)) {
		masks := []byte{0x01}
		if at%5 == 0 {
			masks = append(masks, 0x80, 0xff)
		}
		for _, mask := range masks {
			d := bytes.Clone(data)
			d[at] ^= mask
			_, got, err := readAll(d)
			switch {
			case at < int64(len(Magic)):
				wantErr(t, err, ErrBadMagic)
				continue
			case at < headerEnd:
				wantErr(t, err, ErrChecksum)
				if !strings.Contains(err.Error(), "header") {
					t.Fatalf("flip at %d: error %q does not name the header", at, err)
				}
				continue
			}
			wantErr(t, err, ErrChecksum)
			checkPrefix(t, got, want)
			if at >= trailerAt {
				if !strings.Contains(err.Error(), "trailer") && !strings.Contains(err.Error(), "byte "+strconv.Itoa(int(trailerAt))) {
					t.Fatalf("flip at %d: error %q does not name the trailer", at, err)
				}
				if len(got) != len(want)-1 {
					t.Fatalf("flip at %d in the trailer: read %d records, want all %d but the trailer", at, len(got), len(want)-1)
				}
				continue
			}
			k := 0
			for k < len(spans) && spans[k].end <= at {
				k++
			}
			records := 0
			if k > 0 {
				records = spans[k-1].records
			}
			if len(got) != records {
				t.Fatalf("flip at %d (chunk %d): read %d records, want %d", at, k, len(got), records)
			}
			if name := "chunk " + strconv.Itoa(k) + " at byte " + strconv.Itoa(int(spans[k].at)); !strings.Contains(err.Error(), name) {
				t.Fatalf("flip at %d: error %q does not name %q", at, err, name)
			}
		}
	}
}

func TestReadTrailer(t *testing.T) {
	data, want := session{members: 2, frames: 100, seed: 3, compress: true, close: true}.record(t)
	size := int64(len(data))
	tr, err := ReadTrailer(bytes.NewReader(data), size)
	if err != nil || tr != want[len(want)-1].Trailer {
		t.Fatalf("ReadTrailer = %+v, %v; want %+v", tr, err, want[len(want)-1].Trailer)
	}
	for cut := int64(1); cut < size; cut += 37 {
		_, err := ReadTrailer(bytes.NewReader(data[:cut]), cut)
		if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrMalformed) {
			t.Fatalf("cut at %d: error %v", cut, err)
		}
	}
	_, err = ReadTrailer(bytes.NewReader(data[:size-1]), size-1)
	wantErr(t, err, ErrTruncated)
	for at := size - TrailerSize; at < size; at++ {
		d := bytes.Clone(data)
		d[at] ^= 0x10
		if _, err := ReadTrailer(bytes.NewReader(d), size); !errors.Is(err, ErrChecksum) {
			t.Fatalf("flip at %d: error %v, want ErrChecksum", at, err)
		}
	}
	d := append(bytes.Clone(data), 0)
	_, err = ReadTrailer(bytes.NewReader(d), size+1)
	wantErr(t, err, ErrTruncated)
}

func TestDataAfterTrailer(t *testing.T) {
	data, want := session{members: 2, frames: 50, seed: 3, close: true}.record(t)
	_, got, err := readAll(append(bytes.Clone(data), "junk"...))
	wantErr(t, err, ErrMalformed)
	if len(got) != len(want) {
		t.Errorf("read %d records, want %d", len(got), len(want))
	}
}

func TestOpenFile(t *testing.T) {
	data, want := session{members: 2, frames: 100, seed: 3, compress: true, close: true}.record(t)
	path := writeTemp(t, "a.phx", data)
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if tr, err := f.Trailer(); err != nil || tr.LastFrame != 99 {
		t.Errorf("Trailer = %+v, %v", tr, err)
	}
	if f.Size() != int64(len(data)) || f.Header().SimName != testSimName {
		t.Errorf("size %d, header %+v", f.Size(), f.Header())
	}
	n := 0
	for {
		_, err := f.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(want) {
		t.Errorf("read %d records, want %d", n, len(want))
	}
	if _, err := OpenFile(filepath.Join(t.TempDir(), "missing.phx")); err == nil {
		t.Error("OpenFile of a missing file succeeded")
	}
}

func TestChangeOf(t *testing.T) {
	c, ok := ChangeOf(lockstep.Event{Type: lockstep.EventDrop, Frame: 10, Member: 2, LastFrame: 8, Detail: "silent"})
	if !ok || c != (Change{Kind: ChangeDrop, Frame: 10, Member: 2, LastFrame: 8, Detail: "silent"}) {
		t.Errorf("ChangeOf(drop) = %+v, %v", c, ok)
	}
	if _, ok := ChangeOf(lockstep.Event{Type: lockstep.EventDesync}); ok {
		t.Error("a desync is not a membership change")
	}
}

// withChunk returns a file of two members holding one chunk with payload
// (stored as given, with flags), and no trailer.
func withChunk(t *testing.T, flags byte, payload []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := NewWriter(&buf, testHeader(2)); err != nil {
		t.Fatal(err)
	}
	b := append(buf.Bytes(), blockChunk, flags)
	head := len(b) - 2
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc(b[head:]))
	b = binary.LittleEndian.AppendUint32(b, crc(payload))
	return append(b, payload...)
}

// TestMalformedContent feeds chunks with valid checksums but content that
// breaks the format: each gives ErrMalformed after the frames before it.
func TestMalformedContent(t *testing.T) {
	tests := []struct {
		name    string
		flags   byte
		payload []byte
		frames  int
	}{
		{"unknown record", 0, []byte{0, 0x80, 0x06}, 1},
		{"slot beyond members", 0, []byte{0, 0x42, 0}, 0},
		{"bucket slots decrease", 0, []byte{0, 0x02, 2, 1, 0, 0, 0, 0, 0}, 0},
		{"checkpoint first", 0, []byte{0, 0x04, 1, 2, 3, 4, 5, 6, 7, 8, 0}, 0},
		{"wrong first frame", 0, []byte{5, 0x80}, 0},
		{"no records", 0, []byte{0}, 0},
		{"sections without names", 0, []byte{0, 0x80, 0x04, 1, 2, 3, 4, 5, 6, 7, 8, 1, 1, 2, 3, 4, 5, 6, 7, 8}, 1},
		{"change of kind 3", 0, []byte{0, 0x05, 3, 0, 0, 0, 0}, 0},
		{"empty long run", 0, []byte{0, 0x01, 0}, 0},
		{"cut varint", 0, []byte{0, 0x01, 0x80}, 0},
		{"bad deflate", flagDeflate, []byte{0xff, 0xff, 0xff}, 0},
		{"unknown flag", 0x02, []byte{0, 0x80}, 0},
	}
	for _, tt := range tests {
		_, recs, err := readAll(withChunk(t, tt.flags, tt.payload))
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: error %v, want ErrMalformed", tt.name, err)
		} else if len(recs) != tt.frames {
			t.Errorf("%s: %d records before the error, want %d", tt.name, len(recs), tt.frames)
		}
	}
}

// TestManyEmptyRecords reads a chunk of a million records that deliver
// nothing (section names) without growing the stack.
func TestManyEmptyRecords(t *testing.T) {
	payload := []byte{0}
	for range 1 << 20 {
		payload = append(payload, recSections, 1, 0)
	}
	payload = append(payload, 0x80)
	_, recs, err := readAll(withChunk(t, 0, payload))
	wantErr(t, err, ErrTruncated)
	if len(recs) != 1 {
		t.Errorf("%d records, want 1 frame", len(recs))
	}
}
