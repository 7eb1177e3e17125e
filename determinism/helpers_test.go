package determinism

import (
	"fmt"
	"testing"
)

// The module's go.sum lacks testify's own dependencies, so the tests use
// these small helpers instead of testify.

// message formats optional msg arguments: a format string and its values.
func message(msg []any) string {
	if len(msg) == 0 {
		return ""
	}
	if f, ok := msg[0].(string); ok {
		return ": " + fmt.Sprintf(f, msg[1:]...)
	}
	return ": " + fmt.Sprint(msg...)
}

// assertEqual reports an error if got != want.
func assertEqual[T comparable](t testing.TB, want, got T, msg ...any) bool {
	t.Helper()
	if got != want {
		t.Errorf("got %v, want %v%s", got, want, message(msg))
		return false
	}
	return true
}

// requireEqual stops the test if got != want.
func requireEqual[T comparable](t testing.TB, want, got T, msg ...any) {
	t.Helper()
	if got != want {
		t.Fatalf("got %v, want %v%s", got, want, message(msg))
	}
}

// requireTrue stops the test if ok is false.
func requireTrue(t testing.TB, ok bool, msg ...any) {
	t.Helper()
	if !ok {
		t.Fatalf("condition failed%s", message(msg))
	}
}

// assertPanics reports an error unless f panics with the value want.
func assertPanics(t testing.TB, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("no panic, want %q", want)
			return
		}
		if s, _ := r.(string); s != want {
			t.Errorf("panic %v, want %q", r, want)
		}
	}()
	f()
}
