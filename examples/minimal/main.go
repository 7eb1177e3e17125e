// Command minimal is a whole Phalanx member in one file: Gems, a tiny game
// for 2 to 4 players over QUIC. Tokens run round a ring of 64 cells; gems
// appear on it from the shared seed; a token that lands on a gem scores it.
//
//	go run ./examples/minimal --key a.key --listen /ip4/127.0.0.1/udp/4001/quic-v1 --peers 2 --join ADDRESS-OF-B
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/determinism"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/peer"
	"github.com/phalanx-net/phalanx/rng"
)

const ring = 64

// gems is the simulation: deterministic, stepped with the same commands on
// every member. A command is one signed byte: how far to move.
type gems struct {
	pos, score []int
	gem        int
	r          *rng.PCG
}

func newGems(seed uint64, players int) *gems {
	g := &gems{pos: make([]int, players), score: make([]int, players), r: rng.New(seed, 0)}
	for p := range g.pos {
		g.pos[p] = p * ring / players
	}
	g.gem = g.r.IntN(ring)
	return g
}

func (g *gems) Step(_ bucket.Frame, cmds []bucket.Command) {
	for _, c := range cmds {
		if len(c.Payload) != 1 || int(c.Slot) >= len(g.pos) {
			continue // not a command of this game: ignored alike everywhere
		}
		p := int(c.Slot)
		g.pos[p] = ((g.pos[p]+int(int8(c.Payload[0])))%ring + ring) % ring
		if g.pos[p] == g.gem {
			g.score[p]++
			g.gem = g.r.IntN(ring)
		}
	}
}

func (g *gems) Hash() uint64 {
	h := determinism.NewHasher()
	for p := range g.pos {
		h.WriteInt(g.pos[p])
		h.WriteInt(g.score[p])
	}
	h.WriteInt(g.gem)
	return h.Sum64()
}

// play runs one member to the end of the session and returns its status.
func play(ctx context.Context, host *peer.Host, join []peer.AddrInfo, players, frames int) (peer.Status, error) {
	moves := rand.New(rand.NewPCG(rand.Uint64(), 0)) // this player's own input
	return peer.Run(ctx, peer.MemberConfig{
		Host:   host,
		Params: peer.SessionParams{SessionID: "gems", Members: players, Sim: "gems", SimVersion: "1", Frames: frames},
		Join:   join,
		NewSim: func(s *peer.Agreement) lockstep.Simulation { return newGems(s.Seed.Uint64(), players) },
		Input: func(bucket.Frame) [][]byte {
			if moves.IntN(4) != 0 {
				return nil
			}
			return [][]byte{{byte(int8(moves.IntN(7) - 3))}}
		},
	})
}

func main() {
	listen := flag.String("listen", "/ip4/127.0.0.1/udp/0/quic-v1", "libp2p listen multiaddr")
	key := flag.String("key", "", "identity key file (created if missing)")
	players := flag.Int("peers", 2, "players, 2 to 4")
	frames := flag.Int("frames", 400, "frames to play (20 a second)")
	var join []string
	flag.Func("join", "another player's address (repeatable)", func(s string) error { join = append(join, s); return nil })
	flag.Parse()
	others, err := peer.ParseAddrs(join...)
	if err != nil || *players < 2 || *players > 4 {
		fmt.Fprintln(os.Stderr, "minimal: want --peers 2 to 4 and valid --join addresses:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	host, err := peer.NewHost(ctx, peer.HostConfig{ListenAddrs: []string{*listen}, IdentityFile: *key})
	if err != nil {
		fmt.Fprintln(os.Stderr, "minimal:", err)
		os.Exit(1)
	}
	defer host.Close()
	fmt.Println("address:", host.Addrs()[0])
	st, err := play(ctx, host, others, *players, *frames)
	if err != nil {
		fmt.Fprintln(os.Stderr, "minimal:", err)
		os.Exit(1)
	}
	fmt.Printf("player %d: frame %d, final hash %016x\n", st.Slot, st.Frame, st.Hash)
}
