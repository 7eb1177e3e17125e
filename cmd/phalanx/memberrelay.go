package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/phalanx-net/phalanx/peer"
)

// relayFlags are phalanx peer's flags for members behind NATs: they meet
// through a relay's lobby instead of --join.
type relayFlags struct {
	relay       string
	lobby       string
	publicCIDRs publicCIDRs
}

func (rf *relayFlags) registerRelay(fs *flag.FlagSet) {
	fs.StringVar(&rf.relay, "relay", "", "meet the others through the relay at `ADDR` (phalanx relay prints it) instead of --join: reserve a slot there, wait in --lobby, then connect directly, by hole punching, or through the relay")
	fs.StringVar(&rf.lobby, "lobby", "", "the lobby `NAME` the members agreed on (with --relay)")
	fs.Var(&rf.publicCIDRs, "public-cidr", publicCIDRUsage)
}

func (rf *relayFlags) checkRelay() error {
	switch {
	case rf.relay == "" && rf.lobby != "":
		return fmt.Errorf("--lobby needs --relay")
	case rf.relay != "" && rf.lobby == "":
		return fmt.Errorf("--relay needs --lobby NAME")
	case rf.relay != "":
		if _, err := peer.ParseAddrs(rf.relay); err != nil {
			return fmt.Errorf("--relay: %v; want the /p2p/ address phalanx relay prints", err)
		}
	}
	return nil
}

// meet returns the member's MeetConfig, nil without --relay.
func (rf *relayFlags) meet() *peer.MeetConfig {
	if rf.relay == "" {
		return nil
	}
	infos, _ := peer.ParseAddrs(rf.relay) // checked
	return &peer.MeetConfig{Relay: infos[0], Lobby: rf.lobby}
}

// pathsReport is the "paths" of phalanx peer --json: how this member
// reached each other member.
type pathsReport struct {
	Direct  int          `json:"direct"`
	Punched int          `json:"punched"`
	Relayed int          `json:"relayed"`
	Pairs   []pairReport `json:"pairs"`
}

type pairReport struct {
	Member int     `json:"member"` // its slot
	ID     string  `json:"id"`
	Path   string  `json:"path"`
	RTTms  float64 `json:"rtt_ms"`
}

func newPathsReport(paths []peer.PairPath) *pathsReport {
	if paths == nil {
		return nil
	}
	r := &pathsReport{Pairs: []pairReport{}}
	for _, p := range paths {
		switch p.Path {
		case peer.PathDirect:
			r.Direct++
		case peer.PathPunched:
			r.Punched++
		case peer.PathRelayed:
			r.Relayed++
		}
		r.Pairs = append(r.Pairs, pairReport{Member: int(p.Slot), ID: p.ID.String(), Path: string(p.Path), RTTms: float64(p.RTT.Microseconds()) / 1000})
	}
	return r
}

// printResultJSON prints phalanx peer's result as one JSON line.
func printResultJSON(w io.Writer, res *memberResult) {
	b, _ := json.Marshal(res)
	fmt.Fprintln(w, string(b))
}
