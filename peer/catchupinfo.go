package peer

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/rng"
)

// The info message of the catch-up protocol: the session as the members
// agreed it, and what a member holds for joiners and spectators.

// catchupInfo is a member's answer to an info request: the session as the
// members agreed it, and what the member holds for joiners.
type catchupInfo struct {
	ID          string        `json:"id"`
	Params      SessionParams `json:"params"`
	Seed        rng.Seed      `json:"seed"`
	Members     []string      `json:"members"`
	Endpoints   []string      `json:"endpoints"`
	StartUnixNS int64         `json:"start_unix_ns"`
	Self        int           `json:"self"`
	Live        uint64        `json:"live"`    // slots it counts live (bit i: slot i), itself included
	From        int64         `json:"from"`    // first frame whose bucket it holds
	Stepped     int64         `json:"stepped"` // newest frame it stepped, or -1
	Checkpoints []cpInfo      `json:"checkpoints"`
	// Free are the open slots nobody took that the asker may take (bit i:
	// slot i); Members names "" for them.
	Free uint64 `json:"free,omitempty"`
}

// cpInfo describes one checkpoint a member holds.
type cpInfo struct {
	Frame int64  `json:"frame"`
	Hash  uint64 `json:"hash"`
	Size  int64  `json:"size"`
}

// info describes the session and what this member holds, to asker.
func (srv *catchupServer) info(asker peer.ID) catchupInfo {
	cps, from, next := srv.arch.state()
	in := catchupInfo{
		ID: srv.sess.ID, Params: srv.sess.Params, Seed: srv.sess.Seed,
		StartUnixNS: srv.sess.Start.UnixNano(), Self: int(srv.sess.Self),
		Live: srv.live(), From: int64(from), Stepped: int64(next) - 1,
		Free: srv.sess.freeSlots(asker),
	}
	for i := range srv.sess.Members {
		in.Members = append(in.Members, srv.sess.Member(bucket.Slot(i)).String())
	}
	for i := range srv.sess.Endpoints {
		ep := ""
		if e := srv.sess.endpoint(bucket.Slot(i)); e.IsValid() {
			ep = e.String()
		}
		in.Endpoints = append(in.Endpoints, ep)
	}
	for _, cp := range cps {
		in.Checkpoints = append(in.Checkpoints, cpInfo{Frame: int64(cp.frame), Hash: cp.hash, Size: int64(len(cp.data))})
	}
	return in
}

// agreement rebuilds the session a member described, for member self of
// it.
func (in *catchupInfo) agreement(self peer.ID, endpoint netip.AddrPort) (*Agreement, error) {
	sess, err := in.session()
	if err != nil {
		return nil, err
	}
	slot, ok := sess.Slot(self)
	if !ok {
		return nil, ErrNotAMember
	}
	sess.Self = slot
	sess.Endpoints[slot] = endpoint
	return sess, nil
}

// session rebuilds the session a member described, with Self 0.
func (in *catchupInfo) session() (*Agreement, error) {
	sess := &Agreement{ID: in.ID, Params: in.Params, Seed: in.Seed, Start: time.Unix(0, in.StartUnixNS)}
	if err := in.Params.validate(); err != nil {
		return nil, err
	}
	if len(in.Members) != len(in.Endpoints) || len(in.Members) != in.Params.slots() {
		return nil, errors.New("members and endpoints do not match")
	}
	for i, s := range in.Members {
		var id peer.ID
		var ap netip.AddrPort
		var err error
		switch open := i >= in.Params.Members; {
		case open && s == "":
			// an open slot nobody took
		case s == "":
			return nil, fmt.Errorf("no member %d", i)
		default:
			if id, err = peer.Decode(s); err != nil {
				return nil, err
			}
			if in.Endpoints[i] != "" || !open {
				if ap, err = netip.ParseAddrPort(in.Endpoints[i]); err != nil {
					return nil, err
				}
			}
			if !open && i > 0 && id <= sess.Members[i-1] {
				return nil, errors.New("members not in order")
			}
		}
		sess.Members = append(sess.Members, id)
		sess.Endpoints = append(sess.Endpoints, ap)
	}
	sess.seats = newSeats(in.Params)
	return sess, nil
}

// ErrNotAMember is the error of a Member that comes back (MemberConfig.Rejoin)
// into a session its identity is no member of.
var ErrNotAMember = errors.New("peer: this identity is no member of the session")
