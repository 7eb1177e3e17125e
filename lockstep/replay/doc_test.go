package replay

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/rng"
)

// docExample writes the file of the worked example of docs/replay-format.md.
func docExample(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{
		Session:     []byte{1, 0},
		FrameLength: 50 * time.Millisecond,
		SimName:     "null",
		SimVersion:  "1",
		Seed:        rng.SeedFromUint64(1),
		Members:     []string{"member-0", "member-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	steps := []error{
		w.Step(0, []bucket.Command{{Slot: 1, Seq: 0, Frame: 0, Payload: []byte("hi")}}),
		w.Checkpoint(0, 0x1122334455667788, nil),
		w.Step(1, nil),
		w.Step(2, nil),
		w.Close(2, 0x1122334455667788, EndCompleted),
	}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestFormatDocExample checks the worked example of docs/replay-format.md
// against the writer, and that the reader accepts it.
func TestFormatDocExample(t *testing.T) {
	got := docExample(t)
	doc, err := os.ReadFile("../../docs/replay-format.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "## 9. Worked example")
	if ok {
		_, block, ok = strings.Cut(block, "```hex\n")
	}
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("no hex block in section 9 of docs/replay-format.md")
	}
	var want []byte
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		// Up to 16 hex bytes, then the comment after two spaces.
		line, _, _ := strings.Cut(sc.Text(), "  ")
		b, err := hex.DecodeString(strings.ReplaceAll(line, " ", ""))
		if err != nil {
			t.Fatalf("bad hex line %q: %v", sc.Text(), err)
		}
		want = append(want, b...)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the writer produces\n%s\nthe document shows\n%s", hex.Dump(got), hex.Dump(want))
	}
	if _, recs, err := readAll(got); err != nil || len(recs) != 5 {
		t.Errorf("reading the example: %d records, %v", len(recs), err)
	}
}
