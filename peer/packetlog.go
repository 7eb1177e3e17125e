package peer

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

const (
	dirIn  = "in"
	dirOut = "out"
)

// packetLog writes one line per datagram (in ModeStream, per packet), in
// the spirit of the anet debug drivers' packet logs:
//
//	# phalanx packet log: session "demo", slot 1 of 3 (12D3KooW...), datagram transport, ms since the session start
//	  1234.567 in   2  148 seal=37 cmds=3 n=812 dt=49.8
//	  1236.001 out  2   96 seal=38 cmds=0 n=815
//
// Columns: milliseconds since the session's start time (negative before
// it), direction, the other member's slot, payload size in bytes, and for a
// datagram that parses as a lockstep packet its seal, number of commands and
// datagram number; "dt" on an inbound line is the milliseconds since the
// previous datagram from the same member. A datagram that does not parse
// shows "unparsed". It is safe for concurrent use.
type packetLog struct {
	mu    sync.Mutex
	w     *bufio.Writer
	start time.Time
	last  []time.Time // last inbound datagram per slot
	pkt   wire.Packet // scratch for parsing
	line  []byte
	err   error // first write error; logging stops after it
}

func newPacketLog(w io.Writer, sess *Agreement, members int, mode Mode) *packetLog {
	l := &packetLog{w: bufio.NewWriterSize(w, 32<<10), start: sess.Start, last: make([]time.Time, members)}
	fmt.Fprintf(l.w, "# phalanx packet log: session %q, slot %d of %d (%s), %s transport, ms since the session start\n",
		sess.ID, sess.Self, members, sess.Members[sess.Self], mode)
	return l
}

func (l *packetLog) record(now time.Time, dir string, slot bucket.Slot, data []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	b := l.line[:0]
	b = appendPadded(b, strconv.FormatFloat(float64(now.Sub(l.start))/1e6, 'f', 3, 64), 10)
	b = append(b, ' ')
	b = append(b, dir...)
	if dir == dirIn {
		b = append(b, ' ')
	}
	b = append(b, ' ')
	b = appendPadded(b, strconv.Itoa(int(slot)), 3)
	b = append(b, ' ')
	b = appendPadded(b, strconv.Itoa(len(data)), 4)
	if err := wire.Parse(data, &l.pkt); err == nil {
		b = append(b, " seal="...)
		b = strconv.AppendInt(b, int64(l.pkt.Seal), 10)
		b = append(b, " cmds="...)
		b = strconv.AppendInt(b, int64(len(l.pkt.Commands)), 10)
		b = append(b, " n="...)
		b = strconv.AppendUint(b, uint64(l.pkt.Number), 10)
	} else {
		b = append(b, " unparsed"...)
	}
	if dir == dirIn && int(slot) < len(l.last) {
		if prev := l.last[slot]; !prev.IsZero() {
			b = append(b, " dt="...)
			b = strconv.AppendFloat(b, float64(now.Sub(prev))/1e6, 'f', 1, 64)
		}
		l.last[slot] = now
	}
	b = append(b, '\n')
	l.line = b
	if _, err := l.w.Write(b); err != nil {
		l.err = err
	}
}

func (l *packetLog) flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	l.err = l.w.Flush()
	return l.err
}

func appendPadded(b []byte, s string, width int) []byte {
	for i := len(s); i < width; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}
