package lockstep

import (
	"time"

	"github.com/phalanx-net/phalanx/bucket"
)

// Stats are a core's counters and current measurements: plain values the
// caller reads (a Session copies them out under its lock).
type Stats struct {
	Frame    bucket.Frame  // frame clock
	Executed bucket.Frame  // newest frame stepped
	Seal     bucket.Frame  // our seal
	Delay    int           // frames ahead a command submitted at the start of a frame is stamped now
	Lead     time.Duration // the adaptive policy's lead: how long before a frame's time our seal passes it (0 with a fixed delay or turns)

	Lag      time.Duration // the mean of the reports (ours included; the largest until all are in) of how late the members' datagrams' news reaches a member, what sizes the lead; under a tight budget, the largest report as the lead follows it (the first plus half a step; later, the lead in place of a report less than half a step above it)
	SendWait time.Duration // high percentile of how long a seal change waited for a send
	Slewed   time.Duration // how much the frame clock has been slowed in total

	Stalls int64 // frames that had to wait for a seal
	// Stalled is how long the frame clock waited in all: for each stall,
	// from when the frame's time came (or the frame before it was
	// stepped, if later) until its bucket was complete, as seen by the
	// calls of Ready.
	Stalled   time.Duration
	Submitted int64 // local commands submitted
	Refused   int64 // local commands refused by Submit (ErrFrameFull aside: that is "later"), and a Session's queued commands it could not keep
	Commands  int64 // commands stepped (all members')

	Datagrams         int64 // datagrams sent
	BytesSent         int64 // bytes sent, counting Config.Overhead per datagram
	DatagramsReceived int64
	BytesReceived     int64 // bytes received, counting Config.Overhead per datagram
	Malformed         int64 // received datagrams that did not decode
	Foreign           int64 // received datagrams of another session or sender
	Violations        int64 // protocol violations seen
	Ignored           int64 // received datagrams of members we no longer listen to

	// Signed streams (Config.Signer, Config.Verifier).
	StatementsSigned   int64 // statements of our stream signed
	StatementsVerified int64 // signatures of others' statements checked
	StatementsFailed   int64 // of those, how many failed or contradicted what we hold (each blamed on whom it proves at fault, if anyone: sign.go)
	StatementsStale    int64 // statements not checked: they covered commands no longer held
	Unproven           int64 // relayed commands accepted past the statement that came with them
}

// PeerStats is what one member knows of its path to another.
type PeerStats struct {
	Slot   bucket.Slot
	RTT    time.Duration // smoothed round-trip time
	RTTVar time.Duration // round-trip time variation
	MinRTT time.Duration // smallest recent round-trip time
	OneWay time.Duration // estimated high percentile of the one-way delay from it: min RTT/2 plus the delay variation
	Lag    time.Duration // its report of how late the members' datagrams' news reaches it, by its frame clock
	// Lateness50 and Lateness99 are the median and 99th percentile of how
	// late its datagrams' news reached us, by our frame clock (the samples
	// our Lag reports to it are made of), over the last 256 datagrams.
	Lateness50, Lateness99 time.Duration
	Seal                   bucket.Frame  // its seal as we hold it
	LastHeard              time.Duration // when we last received from it
}

// Stats returns the core's counters.
func (c *Core) Stats() Stats { return c.stats }

// AppendPeerStats appends one entry per other member and returns the
// extended slice.
func (c *Core) AppendPeerStats(dst []PeerStats) []PeerStats {
	for _, r := range c.peers {
		if r == nil {
			continue
		}
		dst = append(dst, PeerStats{
			Slot:       r.slot,
			RTT:        r.srtt,
			RTTVar:     r.rttvar,
			MinRTT:     r.minRTT(),
			OneWay:     r.oneWay(),
			Lag:        r.reportedLag,
			Lateness50: r.lags.Percentile(50),
			Lateness99: r.lags.Percentile(99),
			Seal:       c.table.Stream(r.slot).Seal(),
			LastHeard:  r.lastRecv,
		})
	}
	return dst
}

// Held returns how much of the other members' commands this core holds:
// the commands of their streams' contiguous prefixes and the payload bytes
// of those, and the commands buffered past a gap (at most
// Config.MaxCommandSize bytes each). It walks every held command: call it
// now and then, not on every Ready.
func (c *Core) Held() (commands, bytes, buffered int) {
	for i := range c.cfg.Members {
		slot := bucket.Slot(i)
		if slot == c.self {
			continue
		}
		s := c.table.Stream(slot)
		held := s.Since(0)
		commands += len(held)
		for _, cmd := range held {
			bytes += len(cmd.Payload)
		}
		buffered += s.Buffered()
	}
	return commands, bytes, buffered
}
