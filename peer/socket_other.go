//go:build !linux

package peer

// gsoSegment returns 0: quic-go writes several packets at once (GSO) on
// Linux only.
func gsoSegment([]byte) int { return 0 }
