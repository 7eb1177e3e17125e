package peer

import (
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
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
	refuse := func(reason, detail string) {
		_ = c.write(&lobbyMsg{Type: msgRefuse, Reason: reason, Detail: detail})
		_ = s.Close()
	}
	// A stranger learns nothing of the session: whether it exists, who or
	// how many its members are. It gets what a host without the session
	// says, then its connections are closed and refused for a while.
	switch {
	case l == nil && running == nil:
		refuse(refuseNoSession, "") // perhaps a member early: its Join has not begun
		return
	case l == nil && slices.Contains(running, c.remote):
		refuse(refuseRunning, "the session started without you")
		return
	case l == nil || !slices.Contains(l.members, c.remote):
		h.refusals.refused("peer: lobby: refused a stranger", "session", m.Params.SessionID, "from", c.remote)
		refuse(refuseNoSession, "")
		if !h.mayConnect(c.remote) { // not a member of another session either
			h.refuseStranger(c.remote)
		}
		return
	case c.remote > l.self:
		refuse(refuseDirection, "the lower peer ID opens the lobby stream")
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
