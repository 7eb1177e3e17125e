package main

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/lockstep/replay"
	"github.com/phalanx-net/phalanx/rng"
)

// bombReplay returns a complete replay of the null simulation, about 160
// bytes, whose only chunk records one run of n empty frames and whose
// trailer agrees.
func bombReplay(t *testing.T, n uint64) []byte {
	t.Helper()
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	var buf bytes.Buffer
	h := replay.Header{Session: []byte{1, 0}, FrameLength: 50 * time.Millisecond, SimName: "null", SimVersion: "1",
		Seed: rng.SeedFromUint64(1), Members: []string{"member-0"}}
	if _, err := replay.NewWriter(&buf, h); err != nil {
		t.Fatal(err)
	}
	payload := binary.AppendUvarint([]byte{0, 0x01}, n) // first frame 0; a long run of n empty frames
	b := append(buf.Bytes(), 'C', 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[len(b)-6:], castagnoli))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	b = append(b, payload...)
	at := len(b)
	b = append(b, 'T', byte(replay.EndCompleted), 0, 0)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint64(b, n-1)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(at))
	b = append(b, replay.TrailerMagic...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[at:], castagnoli))
}

// failLine returns the error of the FAIL line for name in out, or "".
func failLine(out, name string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "FAIL "+name+": "); ok {
			// verify may add how far it got, in parentheses.
			if i := strings.Index(rest, " (re-ran "); i >= 0 {
				rest = rest[:i]
			}
			return rest
		}
	}
	return ""
}

// TestReplayDamageAgreement: verify and inspect accept and refuse the same
// files, with the same message: a replay bomb (one run of 10^12 empty
// frames), a good replay with junk appended, and a cut one.
func TestReplayDamageAgreement(t *testing.T) {
	dir := t.TempDir()
	good := record(t, "--peers", "2", "--frames", "100", "--sim", "null")[0]
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"bomb.phx":  bombReplay(t, 1_000_000_000_000),
		"junk.phx":  append(bytes.Clone(data), "junk"...),
		"cut.phx":   data[:len(data)-10],
		"empty.phx": nil,
	}
	for name, b := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		vcode, vout, _ := runCLI(t, "replay", "verify", path)
		icode, iout, _ := runCLI(t, "replay", "inspect", path)
		verr, ierr := failLine(vout, path), failLine(iout, path)
		if vcode != 1 || icode != 1 || verr == "" || verr != ierr {
			t.Errorf("%s: verify exit %d, inspect exit %d; verify says %q, inspect %q\nverify:\n%s\ninspect:\n%s", name, vcode, icode, verr, ierr, vout, iout)
		}
	}
	if !strings.Contains(failLine(runCLIOut(t, "replay", "verify", filepath.Join(dir, "bomb.phx")), filepath.Join(dir, "bomb.phx")), "more than 65536 frames") {
		t.Error("the bomb is not refused for its run")
	}
	if code, out, _ := runCLI(t, "replay", "inspect", good); code != 0 || strings.Contains(out, "FAIL") {
		t.Errorf("inspect of a good file: exit %d\n%s", code, out)
	}
}

func runCLIOut(t *testing.T, args ...string) string {
	t.Helper()
	_, out, _ := runCLI(t, args...)
	return out
}
