package lockstep_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// fuzzMembers is the session size of FuzzCoreReceive.
const fuzzMembers = 3

// appendArrival encodes one arrival for FuzzCoreReceive: the sender, the
// milliseconds since the previous arrival, and the datagram.
func appendArrival(b []byte, from bucket.Slot, dt time.Duration, data []byte) []byte {
	b = append(b, byte(from), byte(dt/time.Millisecond))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(data)))
	return append(b, data...)
}

// recordArrivals plays a short session of fuzzMembers members over a
// network that delivers every datagram 10 ms later, members 1 and 2
// submitting now and then, and returns what member 0 received, encoded for
// FuzzCoreReceive. With drop set, member 2 falls silent halfway.
func recordArrivals(t testing.TB, rounds int, drop bool) []byte {
	cores := make([]*lockstep.Core, fuzzMembers)
	for i := range cores {
		cores[i] = newCore(t, memberConfig(fuzzMembers, bucket.Slot(i)), 0)
	}
	type flight struct {
		from bucket.Slot
		data []byte
	}
	var (
		out  []byte
		last time.Duration
		next [fuzzMembers][]flight
	)
	for round := range rounds {
		now := time.Duration(round) * 10 * time.Millisecond
		arrive := next
		next = [fuzzMembers][]flight{}
		for i, c := range cores {
			if drop && i == 2 && round > rounds/2 {
				continue
			}
			for _, f := range arrive[i] {
				c.Receive(now, f.from, f.data)
				if i == 0 {
					out = appendArrival(out, f.from, now-last, f.data)
					last = now
				}
			}
			if i != 0 && (round+i)%7 == 0 { // member 0, replayed by a fresh core, submits nothing
				if _, err := c.Submit(now, []byte{byte(i), byte(round)}); err != nil {
					t.Fatal(err)
				}
			}
			rd := c.Ready(now)
			for _, d := range rd.Datagrams {
				next[d.To] = append(next[d.To], flight{bucket.Slot(i), append([]byte(nil), d.Data...)})
			}
		}
	}
	return out
}

// FuzzCoreReceive hands member 0 of a three-member session a sequence of
// datagrams from several senders, real ones from a recorded session and
// their mutations, with Ready after each. The core must never panic, and
// what it steps must stay a lockstep: consecutive frames, each bucket in
// canonical order with commands of members that exist, stamped for that
// frame, and sequence numbers that only grow per member.
func FuzzCoreReceive(f *testing.F) {
	f.Add(recordArrivals(f, 150, false))
	f.Add(recordArrivals(f, 200, true))
	f.Add(appendArrival(nil, 1, 10*time.Millisecond, []byte{0xff, 0x00}))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newCore(t, memberConfig(fuzzMembers, 0), 0)
		var (
			now      time.Duration
			executed bucket.Frame = -1
			seqs                  = make([]int64, fuzzMembers)
		)
		for i := range seqs {
			seqs[i] = -1
		}
		for len(data) >= 4 {
			from := bucket.Slot(data[0] % (fuzzMembers + 1)) // one slot beyond the members
			now += time.Duration(data[1]) * time.Millisecond
			n := min(int(binary.LittleEndian.Uint16(data[2:])), len(data)-4)
			c.Receive(now, from, data[4:4+n])
			data = data[4+n:]
			rd := c.Ready(now)
			if rd.Deadline <= now {
				t.Fatalf("deadline %v at %v", rd.Deadline, now)
			}
			for _, b := range rd.Buckets {
				if b.Frame != executed+1 {
					t.Fatalf("stepped frame %d after %d", b.Frame, executed)
				}
				executed = b.Frame
				for i, cmd := range b.Commands {
					switch {
					case int(cmd.Slot) >= fuzzMembers:
						t.Fatalf("frame %d: command of slot %d", b.Frame, cmd.Slot)
					case cmd.Frame != b.Frame:
						t.Fatalf("frame %d: command stamped %d", b.Frame, cmd.Frame)
					case int64(cmd.Seq) <= seqs[cmd.Slot]:
						t.Fatalf("frame %d: slot %d sequence %d after %d", b.Frame, cmd.Slot, cmd.Seq, seqs[cmd.Slot])
					case i > 0 && cmd.Slot < b.Commands[i-1].Slot:
						t.Fatalf("frame %d: not in canonical order", b.Frame)
					}
					seqs[cmd.Slot] = int64(cmd.Seq)
				}
			}
		}
	})
}
