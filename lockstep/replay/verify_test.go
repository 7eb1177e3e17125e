package replay

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

func TestVerify(t *testing.T) {
	s := session{members: 4, frames: 700, seed: 1, compress: true, flushes: true, changes: true, close: true}
	data, want := s.record(t)
	var calls, last, total int64
	res, err := Verify(bytes.NewReader(data), testFactory, func(f, n int64) { calls++; last, total = f, n })
	if err != nil {
		t.Fatal(err)
	}
	changes := 0
	for _, r := range want {
		if r.Kind == KindChange {
			changes++
		}
	}
	end := want[len(want)-1].Trailer
	switch {
	case res.Frames != 700 || res.LastFrame != 699 || !res.Ended || res.End != end:
		t.Errorf("result %+v", res)
	case res.FinalHash != end.FinalHash || res.Diverged != -1:
		t.Errorf("final hash %x, want %x; diverged %d", res.FinalHash, end.FinalHash, res.Diverged)
	case res.Checkpoints != 35 || res.Sections != 3*35 || len(res.Changes) != changes:
		t.Errorf("%d checkpoints, %d sections, %d changes", res.Checkpoints, res.Sections, len(res.Changes))
	case calls < 2 || last != 700 || total != 700:
		t.Errorf("progress: %d calls, last (%d, %d)", calls, last, total)
	}
}

func TestVerifyRefusesOtherSimulation(t *testing.T) {
	data, _ := session{members: 2, frames: 40, seed: 1, close: true}.record(t)
	for _, sim := range [][2]string{{"other", testSimVersion}, {testSimName, "4"}} {
		factory := func(h Header) (lockstep.Simulation, error) {
			if err := h.CheckSim(sim[0], sim[1]); err != nil {
				return nil, err
			}
			return &testSim{frame: -1}, nil
		}
		_, err := Verify(bytes.NewReader(data), factory, nil)
		wantErr(t, err, ErrSimMismatch)
		for _, s := range []string{`"test" version "3"`, `"` + sim[0] + `" version "` + sim[1] + `"`} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q does not name %s", err, s)
			}
		}
	}
	_, err := Verify(bytes.NewReader(data), func(Header) (lockstep.Simulation, error) { return nil, errors.New("no such map") }, nil)
	if err == nil || !strings.Contains(err.Error(), "no such map") {
		t.Errorf("factory error not reported: %v", err)
	}
}

// tamper changes one byte of the payload of the first command at frame or
// later in a file written without compression, and recomputes the chunk's
// CRC so that the file reads without error. It returns the frame changed.
func tamper(t *testing.T, data []byte, want []Record, frame bucket.Frame) bucket.Frame {
	t.Helper()
	var payload []byte
	for _, r := range want {
		if r.Kind == KindFrame && r.Frame >= frame && len(r.Commands) > 0 && len(r.Commands[0].Payload) >= 8 {
			payload, frame = r.Commands[0].Payload, r.Frame
			break
		}
	}
	at := bytes.Index(data, payload)
	if payload == nil || at < 0 || bytes.Count(data, payload) != 1 {
		t.Fatal("no unique payload to tamper with")
	}
	spans, _ := chunkSpans(t, data)
	for _, s := range spans {
		if s.at < int64(at) && int64(at) < s.end {
			if data[s.at+1]&flagDeflate != 0 {
				t.Fatal("tamper needs an uncompressed file")
			}
			data[at] ^= 0x20
			binary.LittleEndian.PutUint32(data[s.at+10:], crc(data[s.at+chunkHeadSize:s.end]))
			return frame
		}
	}
	t.Fatal("payload in no chunk")
	return 0
}

func TestVerifyTamperedCommand(t *testing.T) {
	for _, frame := range []bucket.Frame{0, 133, 401, 695} {
		data, want := session{members: 3, frames: 700, seed: 5, close: true}.record(t)
		changed := tamper(t, data, want, frame)
		if _, _, err := readAll(data); err != nil {
			t.Fatalf("tampered file does not read: %v", err)
		}
		res, err := Verify(bytes.NewReader(data), testFactory, nil)
		wantErr(t, err, ErrDiverged)
		// The first checkpoint at or after the changed frame, or the final
		// hash.
		first := (changed + DefaultHashInterval - 1) / DefaultHashInterval * DefaultHashInterval
		if first > 699 {
			first = 699
		}
		if res.Diverged != first {
			t.Errorf("changed frame %d: diverged at %d, want %d (%v)", changed, res.Diverged, first, err)
		}
		if first < 699 && (res.Section != "inputs" || !strings.Contains(err.Error(), `section "inputs"`)) {
			t.Errorf("changed frame %d: section %q, error %v", changed, res.Section, err)
		}
		if !strings.Contains(err.Error(), "frame "+strconv.Itoa(int(first))) {
			t.Errorf("error %q does not name frame %d", err, first)
		}
		if res.Frames != int(first)+1 {
			t.Errorf("re-ran %d frames, want %d", res.Frames, first+1)
		}
	}
}

func TestVerifyDamaged(t *testing.T) {
	data, _ := session{members: 3, frames: 400, seed: 6, compress: true, close: true}.record(t)
	cut := len(data) / 2
	res, err := Verify(bytes.NewReader(data[:cut]), testFactory, nil)
	wantErr(t, err, ErrTruncated)
	if res.Frames == 0 || res.Frames >= 400 || res.Diverged != -1 || res.LastMatch < 0 {
		t.Errorf("result %+v", res)
	}
	d := bytes.Clone(data)
	d[cut] ^= 1
	if _, err := Verify(bytes.NewReader(d), testFactory, nil); !errors.Is(err, ErrChecksum) {
		t.Errorf("flipped byte: %v", err)
	}
}

func TestVerifyFile(t *testing.T) {
	data, _ := session{members: 2, frames: 300, seed: 8, compress: true, close: true}.record(t)
	path := writeTemp(t, "r.phx", data)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total int64
	if _, err := Verify(f, testFactory, func(_, n int64) { total = n }); err != nil || total != 300 {
		t.Errorf("Verify: %v, total %d", err, total)
	}
	// A reader that cannot seek reports no total.
	if _, err := Verify(io.MultiReader(bytes.NewReader(data)), testFactory, func(_, n int64) { total = n }); err != nil || total != 0 {
		t.Errorf("Verify: %v, total %d", err, total)
	}
}
