package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/phalanx-net/phalanx/peer"
)

// publicCIDRs is the --public-cidr flag, repeatable.
type publicCIDRs []netip.Prefix

func (p *publicCIDRs) String() string {
	var s []string
	for _, c := range *p {
		s = append(s, c.String())
	}
	return strings.Join(s, ",")
}

func (p *publicCIDRs) Set(v string) error {
	c, err := netip.ParsePrefix(v)
	if err != nil {
		return err
	}
	*p = append(*p, c.Masked())
	return nil
}

const publicCIDRUsage = "treat addresses in `CIDR` as public, as the internet's are (repeatable; for labs and private WANs such as 198.18.0.0/15, never needed on the internet)"

// runRelay is phalanx relay: a relay and lobby directory until interrupted.
func runRelay(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("phalanx relay", "phalanx relay --listen MULTIADDR --key FILE [--json]", stderr,
		"Runs the meeting point of members behind NATs (phalanx peer --relay ADDR --lobby NAME):",
		"a circuit relay v2 and a lobby directory. Prints its full address on a line of its own.",
	)
	listen := fs.String("listen", "/ip4/0.0.0.0/udp/4001/quic-v1", "libp2p listen multiaddr (QUIC)")
	key := fs.String("key", "", "identity key file (created if missing; keep it, so the relay's address stays the same)")
	asJSON := fs.Bool("json", false, "print the address as one JSON line with \"addr\"")
	verbose := fs.Bool("v", false, "log every registration")
	var cidrs publicCIDRs
	fs.Var(&cidrs, "public-cidr", publicCIDRUsage)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "phalanx relay: unexpected arguments %q\n", fs.Args())
		return 2
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := peer.NewRelay(ctx, peer.RelayConfig{ListenAddrs: []string{*listen}, IdentityFile: *key, PublicCIDRs: cidrs, Logger: logger})
	if err != nil {
		fmt.Fprintf(stderr, "phalanx relay: %v\n", err)
		return 1
	}
	defer r.Close()
	addrs := r.Addrs()
	if len(addrs) == 0 {
		fmt.Fprintln(stderr, "phalanx relay: no listen address")
		return 1
	}
	// The first address that others can use: not loopback or unspecified
	// when there is one.
	addr := addrs[0]
	for _, a := range addrs {
		if peer.PublicFilter(cidrs)(a) {
			addr = a
			break
		}
	}
	if *asJSON {
		b, _ := json.Marshal(struct {
			Addr  string   `json:"addr"`
			ID    string   `json:"id"`
			Addrs []string `json:"addrs"`
		}{addr.String(), r.ID().String(), multiaddrStrings(addrs)})
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintln(stdout, addr.String())
	}
	<-ctx.Done()
	st := r.Stats()
	members, lobbies := r.Registrations()
	logger.Info("phalanx relay: stopping", "reservations", st.Reservations, "renewals", st.Renewals,
		"circuits", st.Circuits, "bytes_relayed", st.BytesRelayed, "waiting_members", members, "lobbies", lobbies)
	return 0
}

func multiaddrStrings[T fmt.Stringer](as []T) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}
