package peer

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

type dialResult struct {
	id    peer.ID
	c     *lobbyConn
	hello *lobbyMsg
	err   error
	last  error // when ctx ended: why the last try failed
}

// lobbyRetry is how long a dialer waits before trying a member again.
const lobbyRetry = 100 * time.Millisecond

// dial opens the lobby stream to a higher member and exchanges hellos,
// retrying until the member answers with its hello or ctx ends.
func (l *lobby) dial(ctx context.Context, id peer.ID) dialResult {
	var last error
	for {
		if last != nil {
			l.mu.Lock()
			l.tries[id] = last
			l.mu.Unlock()
			select {
			case <-ctx.Done():
				err := fmt.Errorf("peer: lobby: reaching %s: %w (last try: %w)", id, context.Cause(ctx), last)
				return dialResult{id: id, err: err, last: last}
			case <-time.After(lobbyRetry):
			}
		}
		s, err := l.h.h.NewStream(network.WithAllowLimitedConn(ctx, "phalanx lobby"), id, LobbyProtocol)
		if err != nil {
			last = err
			continue
		}
		c := newLobbyConn(s)
		c.stop = context.AfterFunc(ctx, func() { s.Reset() })
		if err := c.write(&l.hello); err != nil {
			c.stop()
			s.Reset()
			last = err
			continue
		}
		var m lobbyMsg
		if err := c.read(&m); err != nil {
			c.stop()
			s.Reset()
			last = err
			continue
		}
		switch {
		case m.Type == msgHello:
			return dialResult{c: c, hello: &m}
		case m.Type == msgRefuse && m.Reason == refuseNoSession:
			c.close()
			last = fmt.Errorf("%w: %s has no session %q (yet?)", ErrNoSession, id, l.params.SessionID)
			continue
		case m.Type == msgRefuse && m.Reason == refuseRunning:
			c.close()
			return dialResult{err: fmt.Errorf("%w: %s says session %q started without us (a member restarted cannot rejoin it): %s", ErrSessionRunning, id, l.params.SessionID, m.Detail)}
		case m.Type == msgRefuse && m.Reason == refuseNotMember: // from older members
			c.close()
			return dialResult{err: fmt.Errorf("%w: %s refused us: %s", ErrNotMember, id, m.Detail)}
		case m.Type == msgAbort:
			c.close()
			return dialResult{err: fmt.Errorf("%w: peer %s gave up: %s", ErrAborted, id, m.Detail)}
		default:
			c.close()
			return dialResult{err: fmt.Errorf("%w: %s answered our hello with %q %s", ErrLobbyProtocol, id, m.Type, m.Reason)}
		}
	}
}
