package peer

import (
	"net"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/phalanx-net/phalanx/netsim"
	"github.com/phalanx-net/phalanx/rng"
)

// segmentOOB returns a UDP_SEGMENT control message of size, as quic-go
// writes it for a GSO write.
func segmentOOB(size uint16) []byte {
	b := make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&b[unix.CmsgSpace(0)])) = size
	return b
}

// TestSocketImpairedGSO: a GSO write through an impaired socket reaches
// the impairment, and the other end, as its packets one by one; the
// socket counts them, and reads in batches count what they read.
func TestSocketImpairedGSO(t *testing.T) {
	if gsoSegment(segmentOOB(100)) != 100 || gsoSegment(nil) != 0 {
		t.Fatalf("gsoSegment(%x) = %d, want 100", segmentOOB(100), gsoSegment(segmentOOB(100)))
	}
	from, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	to, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	a, b := newSocket(from), newSocket(to)
	defer a.Close()
	defer b.Close()
	p, err := netsim.ParseProfile(strings.NewReader("60s latency=1ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	im := netsim.WrapPacketConn(newRawSocket(from), p, rng.New(1, 2))
	defer im.Close()
	var pc net.PacketConn = im
	a.impair.Store(&pc)

	packet := make([]byte, 250)
	for i := range packet {
		packet[i] = byte(i)
	}
	n, oobn, err := a.WriteMsgUDP(packet, segmentOOB(100), to.LocalAddr().(*net.UDPAddr))
	if err != nil || n != 250 || oobn == 0 {
		t.Fatalf("WriteMsgUDP: %d, %d, %v", n, oobn, err)
	}
	if st := im.Stats(); st.Written != 3 || st.Bytes != 250 {
		t.Errorf("the impairment took %d packets, %d bytes; want 3, 250", st.Written, st.Bytes)
	}
	if st := a.counts.stats(); st.Written != 3 || st.WrittenBytes != 250 {
		t.Errorf("the socket counted %+v written, want 3 packets, 250 bytes", st)
	}
	_ = b.SetReadDeadline(time.Now().Add(30 * time.Second)) // a timeout, not a goal
	ms := make([]ipv4.Message, 8)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, 1500)}
	}
	var sizes []int
	for len(sizes) < 3 {
		k, err := b.ReadBatch(ms, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms[:k] {
			if m.Buffers[0][0] != byte(100*len(sizes)) {
				t.Errorf("packet %d starts with byte %d, want %d", len(sizes), m.Buffers[0][0], 100*len(sizes))
			}
			sizes = append(sizes, m.N)
		}
	}
	if len(sizes) != 3 || sizes[0] != 100 || sizes[1] != 100 || sizes[2] != 50 {
		t.Errorf("received packets of %v bytes, want [100 100 50]", sizes)
	}
	if st := b.counts.stats(); st.Read != 3 || st.ReadBytes != 250 {
		t.Errorf("the reading socket counted %+v read, want 3 packets, 250 bytes", st)
	}
}

// TestRawSocketWriteBatch: the impairment's batched writes reach each
// destination, in order, from the socket's own address.
func TestRawSocketWriteBatch(t *testing.T) {
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	from, x, y := listen(), listen(), listen()
	raw := newRawSocket(from)
	for round := range 2 { // the second reuses the messages
		ps := [][]byte{[]byte("x1"), []byte("y1"), []byte("x2")}
		addrs := []net.Addr{x.LocalAddr(), y.LocalAddr(), x.LocalAddr()}
		if n, err := raw.WriteBatch(ps, addrs); n != 3 || err != nil {
			t.Fatalf("round %d: WriteBatch = %d, %v", round, n, err)
		}
		for _, want := range []struct {
			c    *net.UDPConn
			data string
		}{{x, "x1"}, {x, "x2"}, {y, "y1"}} {
			buf := make([]byte, 16)
			want.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, addr, err := want.c.ReadFrom(buf)
			if err != nil || string(buf[:n]) != want.data || addr.String() != from.LocalAddr().String() {
				t.Fatalf("round %d: read %q from %v (%v), want %q from %v", round, buf[:n], addr, err, want.data, from.LocalAddr())
			}
		}
	}
}
