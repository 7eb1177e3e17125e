package lockstep_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// pipe runs cores over a perfect in-memory network with a fixed latency,
// allocating nothing once its queue and buffers have grown: datagram bytes
// are copied into recycled buffers.
type pipe struct {
	cores     []*lockstep.Core
	deadline  []time.Duration
	kick      []bool
	q         []pipeFlight // arrival order (the latency is fixed)
	head      int
	free      [][]byte
	now       time.Duration
	latency   time.Duration
	frame     int
	payload   []byte
	cmdEvery  int // frames between one member's commands; 0 for none
	buckets   int // buckets stepped by all members
	commands  int // commands stepped by all members
	datagrams int // datagrams delivered
}

type pipeFlight struct {
	at       time.Duration
	from, to bucket.Slot
	data     []byte
}

func newPipe(tb testing.TB, members, cmdEvery int, signed bool) *pipe {
	p := &pipe{
		latency:  5 * time.Millisecond,
		cmdEvery: cmdEvery,
		payload:  []byte("move unit 17 to (1024, 768)"),
		deadline: make([]time.Duration, members),
		kick:     make([]bool, members),
	}
	signers, verifier := lockstep.Ed25519Keys(members, []byte("bench"))
	for i := range members {
		cfg := memberConfig(members, bucket.Slot(i))
		if signed {
			cfg.Signer, cfg.Verifier = signers[i], verifier
		}
		p.cores = append(p.cores, newCore(tb, cfg, 0))
	}
	return p
}

// runFrame advances virtual time by one frame: commands due this frame are
// submitted at its start, then every delivery and deadline up to its end is
// handled.
func (p *pipe) runFrame() {
	if p.cmdEvery > 0 {
		for i, c := range p.cores {
			// Staggered so members do not all submit in the same frame.
			if (p.frame+i*p.cmdEvery/len(p.cores))%p.cmdEvery == 0 {
				if _, err := c.Submit(p.now, p.payload); err != nil {
					panic(err)
				}
				p.kick[i] = true
			}
		}
	}
	p.frame++
	end := p.now + frameLen
	for {
		next := end + 1
		for _, d := range p.deadline {
			next = min(next, d)
		}
		if p.head < len(p.q) {
			next = min(next, p.q[p.head].at)
		}
		if next > end {
			p.now = end
			return
		}
		p.now = next
		for p.head < len(p.q) && p.q[p.head].at == next {
			f := p.q[p.head]
			p.q[p.head] = pipeFlight{}
			p.head++
			p.cores[f.to].Receive(next, f.from, f.data)
			p.datagrams++
			p.kick[f.to] = true
			p.free = append(p.free, f.data[:0])
		}
		if p.head == len(p.q) {
			p.q, p.head = p.q[:0], 0
		} else if p.head >= 256 {
			n := copy(p.q, p.q[p.head:])
			clear(p.q[n:])
			p.q, p.head = p.q[:n], 0
		}
		for i, c := range p.cores {
			if !p.kick[i] && p.deadline[i] > next {
				continue
			}
			p.kick[i] = false
			rd := c.Ready(next)
			p.deadline[i] = rd.Deadline
			for _, d := range rd.Datagrams {
				var buf []byte
				if n := len(p.free); n > 0 {
					buf, p.free = p.free[n-1], p.free[:n-1]
				}
				p.q = append(p.q, pipeFlight{at: next + p.latency, from: bucket.Slot(i), to: d.To, data: append(buf, d.Data...)})
			}
			p.buckets += len(rd.Buckets)
			for _, b := range rd.Buckets {
				p.commands += len(b.Commands)
			}
		}
	}
}

func benchmarkCoreFrame(b *testing.B, members, cmdEvery int, signed bool) {
	p := newPipe(b, members, cmdEvery, signed)
	for range 600 { // 30 s: the delay has settled, buffers have grown
		p.runFrame()
	}
	stepped, delivered := p.buckets, p.datagrams
	b.ReportAllocs()
	for b.Loop() {
		p.runFrame()
	}
	if p.buckets-stepped < members*(b.N-5) {
		b.Fatalf("%d buckets stepped in %d frames by %d members", p.buckets-stepped, b.N, members)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(members), "ns/frame/member")
	// A member receives from every other: the work per datagram is what
	// must not grow with the members.
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(1, p.datagrams-delivered)), "ns/datagram")
}

// BenchmarkCoreFrame runs BenchmarkCoreFrame8's idle session and
// BenchmarkCoreFrame8Commands's commands for 8, 32 and 64 members.
func BenchmarkCoreFrame(b *testing.B) {
	for _, members := range []int{8, 32, 64} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) { benchmarkCoreFrame(b, members, 0, false) })
		b.Run(fmt.Sprintf("members=%d/commands", members), func(b *testing.B) { benchmarkCoreFrame(b, members, 20, false) })
	}
}

// BenchmarkCoreFrame8 is one frame of virtual time for 8 members on a
// perfect network, without commands: seals, acks and keep-alives only.
func BenchmarkCoreFrame8(b *testing.B) { benchmarkCoreFrame(b, 8, 0, false) }

// BenchmarkCoreFrame8Commands is BenchmarkCoreFrame8 with one command per
// member per second.
func BenchmarkCoreFrame8Commands(b *testing.B) { benchmarkCoreFrame(b, 8, 20, false) }

// BenchmarkCoreFrame8CommandsSigned is BenchmarkCoreFrame8Commands with
// every member signing its stream and checking the others' (Ed25519).
func BenchmarkCoreFrame8CommandsSigned(b *testing.B) { benchmarkCoreFrame(b, 8, 20, true) }

// TestCoreFrameAllocatesNothing holds the steady state of an idle session
// (seals, acks and keep-alives, no commands) to zero allocations.
func TestCoreFrameAllocatesNothing(t *testing.T) {
	p := newPipe(t, 8, 0, false)
	for range 300 {
		p.runFrame()
	}
	if a := testing.AllocsPerRun(50, p.runFrame); a != 0 {
		t.Errorf("one idle frame of 8 members allocates %v times", a)
	}
}

// TestCoreFrameWithCommandsAllocatesLittle holds a session with commands
// to less than one allocation per frame for all 16 members together: the
// payload copies every member keeps of every command are cut from blocks,
// so they do not grow with the members squared.
func TestCoreFrameWithCommandsAllocatesLittle(t *testing.T) {
	p := newPipe(t, 16, 20, false)
	for range 1200 {
		p.runFrame()
	}
	commands := p.commands
	if a := testing.AllocsPerRun(100, p.runFrame); a >= 1 {
		t.Errorf("one frame of 16 members with commands allocates %v times", a)
	}
	if p.commands-commands < 16*16*100/20/2 {
		t.Fatalf("%d commands stepped in 101 frames", p.commands-commands)
	}
}
