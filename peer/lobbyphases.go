package peer

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/rng"
)

// The lobby machine's phases: what each needs from every member, and how
// it ends.

// answeredPhase reports whether p has sent what the current phase needs.
func (m *lobbyMachine) answeredPhase(p *lobbyPeer) bool {
	switch m.phase {
	case phaseHello:
		return p.hello != nil
	case phaseReveal:
		return p.contrib != nil
	case phaseReady:
		return p.ready != nil
	case phaseStart:
		return p.id != m.coordinator() || p.start != nil
	}
	return true
}

// settle fails the lobby if every member has answered the phase or given
// up, and some gave up; it reports whether the phase can go on.
func (m *lobbyMachine) settle() bool {
	var worst error
	for _, p := range m.peers {
		if m.phase == phaseStart && p.id != m.coordinator() {
			continue
		}
		switch {
		case p.err != nil:
			if worst == nil || errorRank(p.err) > errorRank(worst) {
				worst = p.err
			}
		case !m.answeredPhase(p):
			return false
		}
	}
	if worst != nil {
		m.fail(worst)
		return false
	}
	return true
}

// advance moves through the phases as far as what has arrived allows.
func (m *lobbyMachine) advance(now time.Time) {
	for m.phase != phaseDone {
		switch m.phase {
		case phaseHello:
			if !m.settle() {
				return
			}
			m.transcript = m.transcriptHash()
			revealed := m.cfg.contrib
			if m.cfg.reveal != nil {
				revealed = m.cfg.reveal(slices.Clone(m.cfg.contrib))
			}
			for _, p := range m.peers {
				m.out = append(m.out, lobbySend{to: p.id, msg: lobbyMsg{Type: msgReveal, Contribution: revealed, Transcript: m.transcript}})
			}
			m.phase = phaseReveal
		case phaseReveal:
			for _, p := range m.peers {
				if p.reveal != nil && p.contrib == nil {
					if err := m.checkReveal(p); err != nil {
						m.fail(err)
						return
					}
				}
			}
			if !m.settle() {
				return
			}
			all := [][]byte{m.cfg.contrib}
			for _, p := range m.peers {
				all = append(all, p.contrib)
			}
			m.seed = rng.SharedSeed(all)
			if m.coordinator() == m.cfg.self {
				m.phase = phaseReady
			} else {
				m.out = append(m.out, lobbySend{to: m.coordinator(), msg: lobbyMsg{Type: msgReady, SeedCheck: seedCheck(m.seed)}})
				m.phase = phaseStart
			}
		case phaseReady:
			check := seedCheck(m.seed)
			for _, p := range m.peers {
				if p.ready != nil && !bytes.Equal(p.ready.SeedCheck, check) {
					m.fail(fmt.Errorf("%w: %s derived another seed", ErrTranscriptMismatch, p.id))
					return
				}
			}
			if !m.settle() {
				return
			}
			start := now.Add(StartDelay)
			for _, p := range m.peers {
				m.out = append(m.out, lobbySend{to: p.id, msg: lobbyMsg{Type: msgStart, StartUnixNano: start.UnixNano()}})
			}
			m.finish(start)
		case phaseStart:
			if !m.settle() {
				return
			}
			m.started(now, m.peer(m.coordinator()).start)
		}
	}
}

// checkReveal checks p's reveal against its commitment and our transcript.
func (m *lobbyMachine) checkReveal(p *lobbyPeer) error {
	if !bytes.Equal(p.reveal.Transcript, m.transcript) {
		return fmt.Errorf("%w: %s saw other hellos than we did (a member sent different commitments to different members?)", ErrTranscriptMismatch, p.id)
	}
	var commit [32]byte
	copy(commit[:], p.hello.Commit)
	if len(p.reveal.Contribution) != ContributionSize || !rng.VerifyCommit(commit, p.reveal.Contribution) {
		return fmt.Errorf("%w: %s revealed a contribution that does not match its commitment", ErrBadReveal, p.id)
	}
	p.contrib = p.reveal.Contribution
	return nil
}

// started takes the coordinator's start announcement.
func (m *lobbyMachine) started(now time.Time, msg *lobbyMsg) {
	wall := time.Unix(0, msg.StartUnixNano)
	d := wall.Sub(now)
	if d < -time.Minute || d > time.Minute {
		m.fail(fmt.Errorf("%w: coordinator %s announced a start %v away from our clock; are the clocks synchronized?", ErrLobbyProtocol, m.coordinator(), d.Round(time.Millisecond)))
		return
	}
	if d < 0 {
		m.cfg.log.Warn("peer: announced start is already past: clocks differ?", "by", -d)
	}
	m.finish(now.Add(d)) // keeps now's monotonic reading
}

func (m *lobbyMachine) finish(start time.Time) {
	slots := m.cfg.params.slots() // the open ones after the members, empty
	a := &Agreement{
		ID:        m.cfg.params.SessionID,
		Params:    m.cfg.params,
		Seed:      m.seed,
		Members:   append(slices.Clone(m.cfg.members), make([]peer.ID, slots-len(m.cfg.members))...),
		Start:     start,
		Endpoints: make([]netip.AddrPort, slots),
		seats:     newSeats(m.cfg.params),
	}
	for i, id := range m.cfg.members {
		if id == m.cfg.self {
			a.Self = bucket.Slot(i)
			a.Endpoints[i] = m.cfg.datagram
		} else {
			a.Endpoints[i] = m.peer(id).endpoint
		}
	}
	m.phase, m.result = phaseDone, a
}

// errorRank orders lobby errors by how much they tell: what a member
// found wrong itself before what a peer reported (ErrAborted) before an
// I/O error.
func errorRank(err error) int {
	for _, s := range []error{ErrVersionMismatch, ErrParamsMismatch, ErrMembersMismatch, ErrNotMember,
		ErrBadReveal, ErrTranscriptMismatch, ErrLobbyProtocol} {
		if errors.Is(err, s) {
			return 2
		}
	}
	if errors.Is(err, ErrAborted) {
		return 1
	}
	return 0
}
