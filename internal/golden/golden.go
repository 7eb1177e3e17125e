package golden

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Check fails t unless got equals the contents of the file at path,
// naming the first line that differs. With update set it first writes got
// to path, so the check passes and the diff is left for review.
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if string(got) == string(want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			t.Fatalf("%s differs at line %d (run the test with -update after a deliberate change):\n got: %s\nwant: %s", path, i+1, g[i], w[i])
		}
	}
	t.Fatalf("%s differs: %d lines, it has %d (run the test with -update after a deliberate change)", path, len(g), len(w))
}

// HexDump formats b as lines of a four-digit hex offset and up to 16
// bytes, as the documents show encodings.
func HexDump(b []byte) string {
	var s strings.Builder
	for off := 0; off < len(b); off += 16 {
		fmt.Fprintf(&s, "%04x  % x\n", off, b[off:min(off+16, len(b))])
	}
	return s.String()
}

// InDoc fails t unless the document at path contains every one of texts,
// naming each that it lacks.
func InDoc(t testing.TB, path string, texts ...string) {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range texts {
		if !strings.Contains(string(doc), s) {
			t.Errorf("%s does not contain:\n%s", path, s)
		}
	}
}
