package rts_test

// The replays in testdata/*.phx are regression tests: every one must verify
// against the current rules. They were recorded with
//
//	go run ./cmd/phalanx sim --peers 4 --frames 1200 --profile bad --record DIR
//
// and copied as testdata/bad-4peers-member-N.phx, and over real QUIC with
//
//	go run ./cmd/phalanx mesh --peers 4 --frames 400 --profile bad --record DIR
//
// copied as testdata/mesh-bad-4peers-member-N.phx. Re-record them (and
// increment SimVersion, see version.go) whenever the rules change.

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/examples/rts"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
	"github.com/phalanx-net/phalanx/rng"
)

// replayFactory builds the simulation of an rts replay from its header.
func replayFactory(h replay.Header) (lockstep.Simulation, error) {
	if err := h.CheckSim(rts.SimName, rts.SimVersion); err != nil {
		return nil, err
	}
	var cfg rts.Config
	if err := cfg.UnmarshalBinary(h.SimConfig); err != nil {
		return nil, err
	}
	if cfg.Players != len(h.Members) {
		return nil, errors.New("config and members disagree")
	}
	return rts.NewSim(cfg)
}

func replayFixtures(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.phx"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no replays in testdata: %v", err)
	}
	return files
}

// TestReplayFixtures verifies every replay in testdata with the current
// rules.
func TestReplayFixtures(t *testing.T) {
	for _, name := range replayFixtures(t) {
		t.Run(filepath.Base(name), func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := replay.Verify(f, replayFactory, nil)
			if err != nil {
				t.Fatalf("%v\n(if the rules changed on purpose, increment rts.SimVersion and re-record testdata/*.phx)", err)
			}
			frames := 1200 // the sim fixtures
			if strings.HasPrefix(filepath.Base(name), "mesh-") {
				frames = 400
			}
			if !res.Ended || res.End.Reason != replay.EndCompleted || res.Frames != frames || res.Checkpoints != frames/20 || res.Sections != 5*frames/20 {
				t.Errorf("result %+v", res)
			}
		})
	}
}

// replayContent is a replay's content, deep-copied.
type replayContent struct {
	header  replay.Header
	records []replay.Record
}

func decodeReplay(t *testing.T, data []byte) replayContent {
	t.Helper()
	rd, err := replay.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	d := replayContent{header: rd.Header()}
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return d
		}
		if err != nil {
			t.Fatal(err)
		}
		d.records = append(d.records, rec.Clone())
	}
}

// TestReplayFixturesAgree checks that every member of the recorded session
// recorded the same buckets, checkpoints and end, and headers that differ
// only in the recording member's slot.
func TestReplayFixturesAgree(t *testing.T) {
	sessions := map[string][]string{} // recordings by session: the name before "-member-"
	for _, name := range replayFixtures(t) {
		session, _, _ := strings.Cut(filepath.Base(name), "-member-")
		sessions[session] = append(sessions[session], name)
	}
	for session, names := range sessions {
		t.Run(session, func(t *testing.T) { checkFixturesAgree(t, names) })
	}
}

func checkFixturesAgree(t *testing.T, names []string) {
	var first replayContent
	for i, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		d := decodeReplay(t, data)
		if int(d.header.Self) != i {
			t.Errorf("%s: recorded by member %d", name, d.header.Self)
		}
		d.header.Self = 0
		for j := range d.records {
			d.records[j].Trailer.Offset, d.records[j].Trailer.Chunks = 0, 0 // where members flushed may differ
		}
		if i == 0 {
			first = d
			continue
		}
		if !reflect.DeepEqual(d.header, first.header) {
			t.Errorf("%s: header %+v, member 0's %+v", name, d.header, first.header)
		}
		if !reflect.DeepEqual(d.records, first.records) {
			t.Errorf("%s: records differ from member 0's", name)
		}
	}
}

// rewriteReplay writes the records of d into a new, valid replay, calling edit
// on every frame's commands first.
func rewriteReplay(t *testing.T, d replayContent, edit func(f bucket.Frame, cmds []bucket.Command)) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := replay.NewWriter(&buf, d.header)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range d.records {
		if r.Kind == replay.KindFrame {
			edit(r.Frame, r.Commands)
		}
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestReplayTamperedCommand changes the target of one command of a fixture
// and rewrites it as a valid file: Verify must name the first checkpoint
// after the change and the "units" section.
func TestReplayTamperedCommand(t *testing.T) {
	data, err := os.ReadFile(replayFixtures(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	d := decodeReplay(t, data)
	if _, err := replay.Verify(bytes.NewReader(rewriteReplay(t, d, func(bucket.Frame, []bucket.Command) {})), replayFactory, nil); err != nil {
		t.Fatalf("rewriting without changes: %v", err)
	}
	changed := bucket.Frame(-1)
	tampered := rewriteReplay(t, d, func(f bucket.Frame, cmds []bucket.Command) {
		if changed >= 0 || f < 300 || len(cmds) == 0 {
			return
		}
		c, err := rts.DecodeCommand(cmds[0].Payload)
		if err != nil {
			t.Fatal(err)
		}
		c.Kind, c.Target = rts.Move, rts.Tile{X: 1, Y: 1}
		if cmds[0].Payload, err = c.AppendBinary(nil); err != nil {
			t.Fatal(err)
		}
		changed = f
	})
	res, err := replay.Verify(bytes.NewReader(tampered), replayFactory, nil)
	if !errors.Is(err, replay.ErrDiverged) {
		t.Fatalf("changed frame %d: error %v, want ErrDiverged", changed, err)
	}
	want := (changed + 19) / 20 * 20
	if res.Diverged != want || res.Section != "units" || res.LastMatch != want-20 {
		t.Errorf("changed frame %d: diverged at %d in %q after %d, want %d in \"units\": %v", changed, res.Diverged, res.Section, res.LastMatch, want, err)
	}
	if !strings.Contains(err.Error(), `section "units"`) {
		t.Errorf("error %q does not name the section", err)
	}
}

// TestReplayOtherVersionRefused checks that a replay of another rules
// version is refused, naming both versions.
func TestReplayOtherVersionRefused(t *testing.T) {
	data, err := os.ReadFile(replayFixtures(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	d := decodeReplay(t, data)
	d.header.SimVersion = "0"
	_, err = replay.Verify(bytes.NewReader(rewriteReplay(t, d, func(bucket.Frame, []bucket.Command) {})), replayFactory, nil)
	if !errors.Is(err, replay.ErrSimMismatch) || !strings.Contains(err.Error(), `"rts" version "0"`) || !strings.Contains(err.Error(), `"rts" version "`+rts.SimVersion+`"`) {
		t.Errorf("error %v", err)
	}
}

func TestConfigBinaryRoundTrip(t *testing.T) {
	cfg := rts.DefaultConfig()
	cfg.Seed = 1<<63 + 5
	b, err := cfg.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got rts.Config
	if err := got.UnmarshalBinary(b); err != nil || got != cfg {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for cut := range len(b) {
		if err := got.UnmarshalBinary(b[:cut]); !errors.Is(err, rts.ErrInvalidConfig) {
			t.Errorf("cut at %d: %v", cut, err)
		}
	}
	cfg.Players = 0
	b, _ = cfg.MarshalBinary()
	if err := got.UnmarshalBinary(b); !errors.Is(err, rts.ErrInvalidConfig) {
		t.Errorf("invalid config accepted: %v", err)
	}
}

// hourReplay records one hour (72,000 frames at 20 Hz) of the default game,
// 8 players fed by their generators, without a network: every frame's
// bucket holds the commands the generators issue for it.
func hourReplay(b *testing.B) []byte {
	b.Helper()
	cfg := rts.DefaultConfig()
	s, err := rts.NewSim(cfg)
	if err != nil {
		b.Fatal(err)
	}
	h := replay.Header{FrameLength: 50 * time.Millisecond, SimName: rts.SimName, SimVersion: rts.SimVersion, Seed: rng.SeedFromUint64(cfg.Seed)}
	h.SimConfig, _ = cfg.MarshalBinary()
	gens := make([]*rts.Generator, cfg.Players)
	for p := range gens {
		gens[p] = rts.NewGenerator(cfg, p, cfg.Seed)
		h.Members = append(h.Members, "player-"+string(rune('0'+p)))
	}
	var buf bytes.Buffer
	w, err := replay.NewWriter(&buf, h)
	if err != nil {
		b.Fatal(err)
	}
	seqs := make([]uint32, cfg.Players)
	var cmds []bucket.Command
	for f := range bucket.Frame(72000) {
		cmds = cmds[:0]
		for p, g := range gens {
			for _, payload := range g.Next(int64(f)) {
				cmds = append(cmds, bucket.Command{Slot: bucket.Slot(p), Seq: seqs[p], Frame: f, Payload: payload})
				seqs[p]++
			}
		}
		s.Step(f, cmds)
		if err := w.Record(lockstep.Bucket{Frame: f, Commands: cmds}, s); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(71999, s.Hash(), replay.EndCompleted); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkVerifyHour verifies a one-hour recording of 8 players (goal:
// under 60 s, dominated by the simulation) and reports the file's size per
// hour and per member-hour (goal: under 1 MiB). Its setup records the
// hour, which costs as much as one verification.
func BenchmarkVerifyHour(b *testing.B) {
	data := hourReplay(b)
	b.ReportAllocs()
	var res replay.Result
	for b.Loop() {
		var err error
		if res, err = replay.Verify(bytes.NewReader(data), replayFactory, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(data))/(1<<20), "MiB/hour")
	b.ReportMetric(float64(len(data))/(1<<20)/float64(len(res.Header.Members)), "MiB/member-hour")
	b.ReportMetric(float64(res.Commands), "commands")
}
