package peer

import (
	"net"
	"testing"
	"time"
)

// TestRawSocketWriteBatchDualStack: on a dual-stack IPv6 socket the
// batched writes reach IPv4 destinations too, mixed with IPv6 ones, in
// order. (Linux takes an IPv4 address on such a socket; other systems
// refuse it, which is what the single writes are for. The socket listens
// on every address, as a dual-stack one must; it writes only to loopback.)
func TestRawSocketWriteBatchDualStack(t *testing.T) {
	listen := func(network string, ip net.IP) *net.UDPConn {
		c, err := net.ListenUDP(network, &net.UDPAddr{IP: ip})
		if err != nil {
			t.Skipf("no %s socket on %v: %v", network, ip, err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	from := listen("udp", net.IPv6unspecified)
	x, y := listen("udp4", net.IPv4(127, 0, 0, 1)), listen("udp6", net.IPv6loopback)
	raw := newRawSocket(from)
	if !raw.v6 {
		t.Skip("the socket on [::] is not an IPv6 one")
	}
	ps := [][]byte{[]byte("y1"), []byte("x1"), []byte("y2"), []byte("x2")}
	addrs := []net.Addr{y.LocalAddr(), x.LocalAddr(), y.LocalAddr(), x.LocalAddr()}
	if n, err := raw.WriteBatch(ps, addrs); n != 4 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	for _, want := range []struct {
		c    *net.UDPConn
		data string
	}{{x, "x1"}, {x, "x2"}, {y, "y1"}, {y, "y2"}} {
		buf := make([]byte, 16)
		want.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := want.c.ReadFrom(buf)
		if err != nil || string(buf[:n]) != want.data {
			t.Fatalf("read %q (%v), want %q", buf[:n], err, want.data)
		}
	}
}
