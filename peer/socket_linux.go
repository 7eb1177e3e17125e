package peer

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// gsoSegment returns the segment size a UDP_SEGMENT control message in
// oob asks for (a GSO write of several packets; the size in the host's
// byte order), or 0 when it holds none.
func gsoSegment(oob []byte) int {
	if len(oob) == 0 {
		return 0
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == unix.IPPROTO_UDP && m.Header.Type == unix.UDP_SEGMENT && len(m.Data) >= 2 {
			return int(binary.NativeEndian.Uint16(m.Data))
		}
	}
	return 0
}
