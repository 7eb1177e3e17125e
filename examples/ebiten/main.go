// Command ebiten is Squads, a small real-time game for 2 to 4 players whose
// multiplayer is Phalanx: each player steers a squad with mouse clicks, and
// the first unit to reach the flag scores. It is started like phalanx peer:
//
//	go run . --key a.key --listen /ip4/127.0.0.1/udp/4001/quic-v1 --join ADDRESS-OF-B
//
// The game loop drives a peer.Member in pull mode: Update steps the world
// from Member.Ready and reports each hash, Draw interpolates with
// Member.Alpha, and a click becomes a queued Member.Submit. The world lives on
// Ebitengine's goroutine only.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/hajimehoshi/ebiten/v2"

	"github.com/phalanx-net/phalanx/peer"
)

func main() {
	listen := flag.String("listen", "/ip4/127.0.0.1/udp/0/quic-v1", "libp2p listen multiaddr")
	key := flag.String("key", "", "identity key file (created if missing)")
	players := flag.Int("peers", 2, "players, 2 to 4")
	frames := flag.Int("frames", 1200, "frames the match lasts (20 a second)")
	script := flag.Bool("script", false, "play by a script instead of the mouse (for tests)")
	shot := flag.String("screenshot", "", "save the window at the last frame to this PNG file")
	var join []string
	flag.Func("join", "another player's address (repeatable)", func(s string) error { join = append(join, s); return nil })
	flag.Parse()
	others, err := peer.ParseAddrs(join...)
	if err != nil || *players < 2 || *players > 4 {
		fmt.Fprintln(os.Stderr, "ebiten: want --peers 2 to 4 and valid --join addresses:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	host, err := peer.NewHost(ctx, peer.HostConfig{ListenAddrs: []string{*listen}, IdentityFile: *key})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ebiten:", err)
		os.Exit(1)
	}
	defer host.Close()
	fmt.Println("address:", host.Addrs()[0])
	if len(others) != *players-1 {
		fmt.Fprintln(os.Stderr, "ebiten: give one --join per other player")
		os.Exit(2)
	}
	m, err := peer.Start(ctx, peer.MemberConfig{
		Host:   host,
		Params: peer.SessionParams{SessionID: "squads", Members: *players, Sim: "squads", SimVersion: "1", Frames: *frames},
		Join:   others,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ebiten:", err)
		os.Exit(2)
	}
	ebiten.SetWindowSize(2*fieldW, 2*fieldH)
	ebiten.SetWindowTitle("Squads over Phalanx")
	ebiten.SetRunnableOnUnfocused(true)
	runErr := ebiten.RunGame(newGame(m, *players, *script, *shot))
	closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = m.Close(closeCtx) // a no-op once the match ended on its own
	st := m.Status()
	if runErr == nil {
		runErr = st.Err
	}
	if runErr != nil {
		fmt.Fprintln(os.Stderr, "ebiten:", runErr)
		os.Exit(1)
	}
	fmt.Printf("player %d: frame %d, final hash %016x\n", st.Slot, st.Frame, st.Hash)
}
