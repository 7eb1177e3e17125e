package rts

// generated returns the inputs of every player's generator at a frame,
// player by player; call it once per frame, in frame order.
func generated(cfg Config) func(f int64) []Input {
	gens := make([]*Generator, cfg.Players)
	for p := range gens {
		gens[p] = NewGenerator(cfg, p, cfg.Seed)
	}
	return func(f int64) []Input {
		var in []Input
		for p, g := range gens {
			for _, d := range g.Next(f) {
				in = append(in, Input{Player: p, Data: d})
			}
		}
		return in
	}
}
