package rts_test

import (
	"fmt"

	"github.com/phalanx-net/phalanx/examples/rts"
)

// Example plays a small two-player game: player 0 sends its army against
// one of player 1's units, whose comrades come to help. Both bases train
// replacements for their dead.
func Example() {
	cfg := rts.Config{Players: 2, UnitsPerPlayer: 8, MapWidth: 48, MapHeight: 48, Seed: 42, ObstaclePct: 10}
	w, err := rts.New(cfg)
	if err != nil {
		panic(err)
	}
	// Player 0 owns units 0 to 7, player 1 owns units 8 to 15.
	attack := rts.Command{Kind: rts.Attack, Units: []rts.UnitID{0, 1, 2, 3, 4, 5, 6, 7}, TargetUnit: 12}
	data, err := attack.AppendBinary(nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("encoded: % x\n", data)

	errs := w.Step([]rts.Input{{Player: 0, Data: data}})
	fmt.Println("errors:", errs)
	u, _ := w.Unit(0)
	fmt.Println("unit 0:", u.Order, "from tile", u.Tile)
	for w.Frame() < 600 {
		w.Step(nil)
	}
	s := w.Stats()
	fmt.Println("kills:", s.Kills, "strikes:", s.Strikes)
	fmt.Printf("hash: %#016x\n", w.Hash())
	// Output:
	// encoded: 03 08 00 00 00 00 00 00 00 00 0c
	// errors: []
	// unit 0: Attack from tile {4 3}
	// kills: [2 2] strikes: 257
	// hash: 0x866b5e01db014291
}
