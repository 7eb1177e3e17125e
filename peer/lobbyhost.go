package peer

import (
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

func (h *Host) register(l *lobby) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrHostClosed
	}
	if h.lobbies[l.params.SessionID] != nil {
		return fmt.Errorf("%w: %q", ErrJoinBusy, l.params.SessionID)
	}
	h.lobbies[l.params.SessionID] = l
	if _, ok := h.running[l.params.SessionID]; ok { // joined again
		delete(h.running, l.params.SessionID)
		h.runningOrder = slices.DeleteFunc(h.runningOrder, func(id string) bool { return id == l.params.SessionID })
	}
	return nil
}

// maxRunning bounds the sessions a host remembers having joined, for
// telling a restarted member that its session runs without it.
const maxRunning = 16

// remember records that the host joined sess, forgetting the oldest
// session past maxRunning.
func (h *Host) remember(sess *Agreement) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.running[sess.ID]; !ok {
		h.runningOrder = append(h.runningOrder, sess.ID)
	}
	h.running[sess.ID] = sess.Members
	for len(h.runningOrder) > maxRunning {
		delete(h.running, h.runningOrder[0])
		h.runningOrder = h.runningOrder[1:]
	}
}

// closeStrangers closes the connections of peers that are members of no
// session the host knows: they connected before it knew its sessions.
func (h *Host) closeStrangers() {
	for _, p := range h.h.Network().Peers() {
		if !h.mayConnect(p) {
			_ = h.h.Network().ClosePeer(p)
		}
	}
}

// unregister removes l and resets the streams it was handed but did not use.
func (h *Host) unregister(l *lobby) {
	h.mu.Lock()
	delete(h.lobbies, l.params.SessionID)
	h.mu.Unlock()
	for {
		select {
		case a := <-l.accepted:
			a.c.s.Reset()
		default:
			return
		}
	}
}

// handleLobbyStream serves a lobby stream a lower member opened: it reads the
// hello, finds the Join it belongs to, answers with that Join's hello and
// hands the stream over. Streams for no Join in progress are refused.
func (h *Host) handleLobbyStream(s network.Stream) {
	c := newLobbyConn(s)
	_ = s.SetDeadline(time.Now().Add(10 * time.Second))
	var m lobbyMsg
	if err := c.read(&m); err != nil || m.Type != msgHello || m.Params == nil {
		h.log.Debug("peer: lobby: bad first message", "from", c.remote, "err", err, "type", m.Type)
		s.Reset()
		return
	}
	h.mu.Lock()
	l := h.lobbies[m.Params.SessionID]
	running := h.running[m.Params.SessionID]
	h.mu.Unlock()
	var members []peer.ID
	var self peer.ID
	if l != nil {
		members, self = l.members, l.self
	}
	reason, detail, stranger := lobbyRefusal(members, self, running, c.remote)
	if stranger {
		h.refusals.refused("peer: lobby: refused a stranger", "session", m.Params.SessionID, "from", c.remote)
	}
	if reason != "" {
		_ = c.write(&lobbyMsg{Type: msgRefuse, Reason: reason, Detail: detail})
		_ = s.Close()
		if stranger && !h.mayConnect(c.remote) { // not a member of another session either
			h.refuseStranger(c.remote)
		}
		return
	}
	if err := c.write(&l.hello); err != nil {
		s.Reset()
		return
	}
	_ = s.SetDeadline(time.Time{})
	// Hand over only while the Join is still registered: unregister drains
	// the channel after removing it, so no stream is left behind.
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lobbies[l.params.SessionID] == l {
		select {
		case l.accepted <- arrival{c: c, hello: &m}:
			return
		default:
		}
	}
	s.Reset()
}

// lobbyRefusal decides how a host answers the hello that opens a lobby
// stream from `from`: members and self are those of the Join in progress
// for the hello's session (nil members if none), running the members of
// that session if it started without a Join in progress. An empty reason
// accepts the stream. A stranger learns nothing of the session: whether it
// exists, who or how many its members are; it gets what a host without the
// session says, and stranger is true.
func lobbyRefusal(members []peer.ID, self peer.ID, running []peer.ID, from peer.ID) (reason, detail string, stranger bool) {
	switch {
	case members == nil && running == nil:
		return refuseNoSession, "", false // perhaps a member early: its Join has not begun
	case members == nil && slices.Contains(running, from):
		return refuseRunning, "the session started without you", false
	case !slices.Contains(members, from):
		return refuseNoSession, "", true
	case from > self:
		return refuseDirection, "the lower peer ID opens the lobby stream", false
	}
	return "", "", false
}
