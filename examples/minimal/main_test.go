package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"

	"github.com/phalanx-net/phalanx/peer"
)

// TestThreePlayersAgree plays three members of the example over QUIC on
// loopback and checks that each stepped every frame and that they agree
// on the final hash.
func TestThreePlayersAgree(t *testing.T) {
	const players, frames = 3, 120
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hosts := make([]*peer.Host, players)
	for i := range hosts {
		h, err := peer.NewHost(ctx, peer.HostConfig{ListenAddrs: []string{"/ip4/127.0.0.1/udp/0/quic-v1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		hosts[i] = h
	}
	type result struct {
		st  peer.Status
		err error
	}
	results := make(chan result, players)
	for i, h := range hosts {
		var join []peer.AddrInfo
		for j, o := range hosts {
			if j != i {
				join = append(join, o.AddrInfo())
			}
		}
		go func() {
			st, err := play(ctx, h, join, players, frames)
			results <- result{st, err}
		}()
	}
	var hash uint64
	for i := range players {
		r := <-results
		if r.err != nil {
			t.Fatalf("member: %v", r.err)
		}
		if !r.st.Completed || r.st.Frame != frames-1 || r.st.Phase != peer.PhaseEnded {
			t.Errorf("member %d ended %v at frame %d, completed %v; want frame %d", r.st.Slot, r.st.Phase, r.st.Frame, r.st.Completed, frames-1)
		}
		if r.st.Stats.Core.Submitted == 0 || r.st.Stats.Core.Commands == 0 {
			t.Errorf("member %d submitted %d and stepped %d commands: the game was not played", r.st.Slot, r.st.Stats.Core.Submitted, r.st.Stats.Core.Commands)
		}
		if i == 0 {
			hash = r.st.Hash
		} else if r.st.Hash != hash {
			t.Errorf("member %d: final hash %016x, another %016x", r.st.Slot, r.st.Hash, hash)
		}
	}
}

// TestGemsMovesAndScores checks the rules: moves wrap round the ring, a token
// landing on the gem scores it, and foreign commands change nothing.
func TestGemsMovesAndScores(t *testing.T) {
	g := newGems(7, 2)
	start := g.Hash()
	g.Step(0, []bucket.Command{{Slot: 1, Payload: []byte{1, 2}}, {Slot: 5, Payload: []byte{1}}})
	if g.Hash() != start {
		t.Fatal("commands that are not the game's changed the state")
	}
	g.Step(1, []bucket.Command{{Slot: 0, Payload: []byte{byte(0xff)}}}) // -1
	if g.pos[0] != ring-1 {
		t.Fatalf("token 0 at %d after moving back from 0, want %d", g.pos[0], ring-1)
	}
	gem := g.gem
	g.Step(2, []bucket.Command{{Slot: 1, Payload: []byte{byte(int8(gem - g.pos[1]))}}})
	if g.score[1] != 1 || g.pos[1] != gem {
		t.Fatalf("token 1 at %d with score %d after moving onto the gem at %d", g.pos[1], g.score[1], gem)
	}
}

// TestEmbeddingDocQuotesThisExample keeps docs/embedding.md's copy of this
// program true.
func TestEmbeddingDocQuotesThisExample(t *testing.T) {
	code, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "embedding.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, append(append([]byte("```go\n"), code...), "```"...)) {
		t.Error("docs/embedding.md does not quote examples/minimal/main.go as it is: copy it there again")
	}
}
