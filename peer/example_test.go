package peer_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/peer"
)

// Two members on loopback agree on a session and exchange a datagram.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	hosts := make([]*peer.Host, 2)
	for i := range hosts {
		h, err := peer.NewHost(ctx, peer.HostConfig{})
		if err != nil {
			panic(err)
		}
		defer h.Close()
		hosts[i] = h
	}
	params := peer.SessionParams{SessionID: "example", Members: 2, Sim: "rts", SimVersion: "1"}

	var wg sync.WaitGroup
	sessions := make([]*peer.Agreement, 2)
	transports := make([]*peer.Transport, 2)
	for i, h := range hosts {
		other := hosts[1-i]
		wg.Go(func() {
			s, err := peer.Join(ctx, h, params, []libp2ppeer.AddrInfo{other.AddrInfo()})
			if err != nil {
				panic(err)
			}
			sessions[i] = s
			if transports[i], err = peer.NewTransport(ctx, h, s, peer.TransportConfig{}); err != nil {
				panic(err)
			}
		})
	}
	wg.Wait()
	defer transports[0].Close()
	defer transports[1].Close()

	fmt.Println("same seed:", sessions[0].Seed == sessions[1].Seed)
	fmt.Println("slots:", sessions[0].Self+sessions[1].Self == 1)

	if err := transports[0].Send(sessions[1].Self, []byte("hello")); err != nil {
		panic(err)
	}
	in := <-transports[1].Incoming()
	fmt.Printf("got %q from the sender: %v\n", in.Data, in.From == sessions[0].Self)
	// Output:
	// same seed: true
	// slots: true
	// got "hello" from the sender: true
}
