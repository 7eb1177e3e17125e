package chart

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
)

// CheckSVG returns nil when r holds well-formed XML whose root element is
// svg, as SVG writes, and otherwise an error saying what is wrong: the
// check the tests of every figure make.
func CheckSVG(r io.Reader) error {
	d := xml.NewDecoder(r)
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("chart: not well-formed XML: %w", err)
		}
		if s, ok := tok.(xml.StartElement); ok && root == "" {
			root = s.Name.Local
		}
	}
	if root != "svg" {
		return fmt.Errorf("chart: root element %q, want svg", root)
	}
	return nil
}
