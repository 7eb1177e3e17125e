package view

// Drawable is an optional interface of a lockstep.Simulation whose state
// can be drawn as units on a tile map: the page draws the Scene it fills.
// Scene is called from the goroutine that steps the simulation, between
// steps, never concurrently with Step; it must not change the state.
type Drawable interface {
	// Scene describes the state after the last step in s, reusing the
	// capacity of s's slices.
	Scene(s *Scene)
}

// Scene is a simulation's state as the page draws it: a map of Width by
// Height tiles, some blocked, and units on it. Positions are in tiles, a
// tile's centre at (x+½, y+½).
type Scene struct {
	Frame   int64 `json:"frame"` // steps taken so far
	Width   int   `json:"w"`
	Height  int   `json:"h"`
	Players int   `json:"players"`
	// Blocked has one bit per tile, row by row from the north-west corner,
	// least significant bit first: set where units cannot go.
	Blocked []byte `json:"blocked"`
	// Units are the living units.
	Units []Unit `json:"units"`
}

// Unit is one unit of a Scene.
type Unit struct {
	ID    uint32  `json:"i"`
	Owner int     `json:"o"`
	X     float32 `json:"x"`
	Y     float32 `json:"y"`
	HP    int     `json:"h"`           // hit points
	MaxHP int     `json:"m"`           // hit points when unhurt
	Kind  uint8   `json:"k"`           // the simulation's own kind number (drawn in a different shape)
	Order string  `json:"c,omitempty"` // its current order, "" when idle
	// TX and TY are where its order takes it, when it has one (-1 otherwise).
	TX int `json:"tx"`
	TY int `json:"ty"`
}

// IsBlocked reports whether tile (x, y) of s is blocked.
func (s *Scene) IsBlocked(x, y int) bool {
	i := y*s.Width + x
	if x < 0 || y < 0 || x >= s.Width || y >= s.Height || i/8 >= len(s.Blocked) {
		return true
	}
	return s.Blocked[i/8]>>(i%8)&1 != 0
}
