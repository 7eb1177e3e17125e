package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/phalanx-net/phalanx/internal/chart"
)

// TestPictureIsUpToDate checks that the committed picture is what the
// command draws now and that it is well-formed XML. After a change, run
// go run ./cmd/reckonplot -o docs/images/convergence.svg
func TestPictureIsUpToDate(t *testing.T) {
	var got bytes.Buffer
	if err := render(&got); err != nil {
		t.Fatal(err)
	}
	if err := chart.CheckSVG(bytes.NewReader(got.Bytes())); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "docs", "images", "convergence.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Error("docs/images/convergence.svg is out of date: run go run ./cmd/reckonplot -o docs/images/convergence.svg")
	}
}
