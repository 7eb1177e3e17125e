package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that notes a failure instead of stopping the
// test, so the test can check that a check fails.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(r) }
func (r *recorder) Fatal(...any)          { r.failed = true; panic(r) }
func (r *recorder) fails(f func(tb testing.TB)) (failed bool) {
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		failed = r.failed
	}()
	r.failed = false
	f(r)
	return
}

func TestCheckAndUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.golden")
	r := &recorder{TB: t}
	if !r.fails(func(tb testing.TB) { Check(tb, path, []byte("a\nb\n"), false) }) {
		t.Error("a missing golden file passed")
	}
	Check(t, path, []byte("a\nb\n"), true)
	if b, _ := os.ReadFile(path); string(b) != "a\nb\n" {
		t.Errorf("update wrote %q", b)
	}
	Check(t, path, []byte("a\nb\n"), false)
	for _, other := range []string{"a\nc\n", "a\nb\nc\n", "a\n"} {
		if !r.fails(func(tb testing.TB) { Check(tb, path, []byte(other), false) }) {
			t.Errorf("%q passed against %q", other, "a\nb\n")
		}
	}
}

func TestHexDump(t *testing.T) {
	b := make([]byte, 18)
	for i := range b {
		b[i] = byte(i)
	}
	want := "0000  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f\n0010  10 11\n"
	if got := HexDump(b); got != want {
		t.Errorf("HexDump = %q, want %q", got, want)
	}
}

func TestInDoc(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte("the example (12 bytes)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	InDoc(t, path, "example", "(12 bytes)")
	r := &recorder{TB: t}
	if !r.fails(func(tb testing.TB) { InDoc(tb, path, "example", "(13 bytes)") }) {
		t.Error("a missing text passed")
	}
}
