package peer

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/replay"
)

// The states of both sides in a desync report (docs/replay-format.md,
// §11, "States").
//
// A member whose simulation is a lockstep.Snapshotter, and that writes
// desync reports, keeps its state after each recent frame
// (replay.StateRing). When it finds a desync it writes its report at once
// with its own states at the last agreed checkpoint and at the divergent
// frame, then asks the member it compared with for that member's states at
// the same two frames over a libp2p stream, and writes the report again
// with them. Each side asks the other, so each report holds both sides.

// desyncStatesProtocol is the libp2p stream protocol on which a member
// answers for its states during session id: one per session, so that two
// sessions on one host do not answer for each other.
func desyncStatesProtocol(id string) protocol.ID {
	sum := sha256.Sum256([]byte(id))
	return protocol.ID("/phalanx/desync-states/1.0.0/" + hex.EncodeToString(sum[:8]))
}

// desyncStatesTimeout bounds one exchange of states, asking or answering.
const desyncStatesTimeout = 10 * time.Second

// maxDesyncState bounds one state sent or accepted.
const maxDesyncState = 64 << 20

// maxDesyncFrames bounds the frames one request asks for.
const maxDesyncFrames = 4

// serveStates answers a member of the session that asks for our states:
// the request is a count and that many frames (uvarints); the answer, per
// frame, a byte (1: held, 0: not), and when held the state hash (u64,
// little-endian), the state's length (uvarint) and the state.
func (m *Member) serveStates(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(desyncStatesTimeout))
	m.mu.Lock()
	sess, ring := m.sess, m.states
	m.mu.Unlock()
	if sess == nil || ring == nil || !sess.isMember(s.Conn().RemotePeer()) {
		s.Reset()
		return
	}
	r := bufio.NewReader(s)
	n, err := binary.ReadUvarint(r)
	if err != nil || n > maxDesyncFrames {
		s.Reset()
		return
	}
	w := bufio.NewWriter(s)
	for range n {
		f, err := binary.ReadUvarint(r)
		if err != nil || f > 1<<62 {
			s.Reset()
			return
		}
		m.mu.Lock()
		data, hash, ok := ring.At(bucket.Frame(f))
		m.mu.Unlock()
		if !ok {
			w.WriteByte(0)
			continue
		}
		w.WriteByte(1)
		w.Write(binary.LittleEndian.AppendUint64(nil, hash))
		w.Write(binary.AppendUvarint(nil, uint64(len(data))))
		w.Write(data)
	}
	if w.Flush() != nil {
		s.Reset()
	}
}

// fetchStates asks member with for its states at rep's last agreed
// checkpoint and divergent frame, adds those it sends to rep and writes rep
// into dir again. It runs on its own goroutine (Member.fetches), and ends
// within desyncStatesTimeout or when ctx ends.
func (m *Member) fetchStates(ctx context.Context, sess *Agreement, dir string, rep replay.Report) {
	ctx, cancel := context.WithTimeout(ctx, desyncStatesTimeout)
	defer cancel()
	frames := []int64{rep.Agreed, rep.Frame}
	if rep.Agreed < 0 {
		frames = frames[1:]
	}
	got, err := askStates(ctx, m.cfg.Host, sess, rep.With, frames)
	if err != nil {
		m.log.Warn("peer: the other side's states for the desync report not received", "member", rep.With, "err", err)
		return
	}
	for _, s := range got {
		rep.AddState(s)
	}
	if len(got) == 0 {
		return
	}
	if _, err := replay.WriteReport(dir, rep); err != nil {
		m.log.Error("peer: desync report not written", "err", err)
		return
	}
	m.log.Info("peer: desync report holds the other side's states", "member", rep.With, "states", len(got))
}

// askStates asks member with of sess for its states after frames.
func askStates(ctx context.Context, h *Host, sess *Agreement, with int, frames []int64) ([]replay.ReportState, error) {
	if with < 0 || with >= len(sess.Members) {
		return nil, fmt.Errorf("no member %d", with)
	}
	s, err := h.h.NewStream(network.WithAllowLimitedConn(ctx, "phalanx desync states"), sess.Member(bucket.Slot(with)), desyncStatesProtocol(sess.ID))
	if err != nil {
		return nil, err
	}
	defer s.Close()
	defer context.AfterFunc(ctx, func() { s.Reset() })()
	if dl, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(dl)
	}
	req := binary.AppendUvarint(nil, uint64(len(frames)))
	for _, f := range frames {
		req = binary.AppendUvarint(req, uint64(f))
	}
	if _, err := s.Write(req); err != nil {
		return nil, err
	}
	if err := s.CloseWrite(); err != nil {
		return nil, err
	}
	r := bufio.NewReader(s)
	var out []replay.ReportState
	for _, f := range frames {
		held, err := r.ReadByte()
		if err != nil {
			return out, err
		}
		if held == 0 {
			continue
		}
		var hash [8]byte
		if _, err := io.ReadFull(r, hash[:]); err != nil {
			return out, err
		}
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return out, err
		}
		if n > maxDesyncState {
			return out, errors.New("a state larger than the bound")
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(r, data); err != nil {
			return out, err
		}
		out = append(out, replay.ReportState{Member: with, Frame: f, Hash: fmt.Sprintf("%016x", binary.LittleEndian.Uint64(hash[:])), Data: data})
	}
	return out, nil
}
