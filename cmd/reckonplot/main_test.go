package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestPictureIsUpToDate checks that the committed picture is what the
// command draws now and that it is well-formed XML. After a change, run
// go run ./cmd/reckonplot -o docs/images/convergence.svg
func TestPictureIsUpToDate(t *testing.T) {
	var got bytes.Buffer
	if err := render(&got); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(got.Bytes()))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "docs", "images", "convergence.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Error("docs/images/convergence.svg is out of date: run go run ./cmd/reckonplot -o docs/images/convergence.svg")
	}
}
