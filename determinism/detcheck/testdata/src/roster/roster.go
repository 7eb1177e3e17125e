// Package roster is a helper package, not marked, whose map-backed type is
// used through an interface.
package roster

// Names is a set of player names.
type Names map[string]bool

// List returns the names in map order.
func (n Names) List() []string {
	var out []string
	for name := range n {
		out = append(out, name)
	}
	return out
}
