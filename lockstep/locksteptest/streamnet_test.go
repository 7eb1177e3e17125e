package locksteptest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/netsim"
)

func runStream(t testing.TB, profile string, members, frames int, seed uint64, transport string) *Result {
	t.Helper()
	core := lockstep.Config{}
	if transport == TransportStream {
		// A reliable stream loses nothing, it only delays, at times by
		// more than the default drop timeout on the worst profiles; the
		// CLI waits as long (cmd/phalanx streamDropTimeout).
		core.DropTimeout = time.Minute
	}
	return runOver(t, profile, members, frames, seed, core, transport)
}

// TestStreamTransportIdentical runs sessions over the stream transport:
// every member steps identical buckets, the wire counters include the
// retransmissions, and the lossy profiles do retransmit.
func TestStreamTransportIdentical(t *testing.T) {
	for _, tt := range []struct {
		profile string
		members int
		seed    uint64
	}{
		{"broadband", 3, 1},
		{"intercontinental", 4, 2},
		{"bad", 4, 3},
		{"bad", 2, 4},
		{"modem", 4, 5},
	} {
		t.Run(fmt.Sprintf("%s/%d/seed=%d", tt.profile, tt.members, tt.seed), func(t *testing.T) {
			res := runStream(t, tt.profile, tt.members, 400, tt.seed, TransportStream)
			if !res.Identical {
				t.Fatalf("not identical: first divergent frame %d", res.Diverged)
			}
			if len(res.Reliable) != tt.members {
				t.Fatalf("%d stream stats for %d members", len(res.Reliable), tt.members)
			}
			var retransmits int64
			for i, m := range res.Members {
				st := res.Reliable[i]
				if m.Stats.Datagrams != st.Segments+st.Retransmits {
					t.Errorf("member %d: %d datagrams on the wire, %d segments + %d retransmissions", i, m.Stats.Datagrams, st.Segments, st.Retransmits)
				}
				retransmits += st.Retransmits
			}
			if tt.profile == "bad" && retransmits == 0 {
				t.Error("no retransmission on the bad profile")
			}
		})
	}
}

// TestStreamTransparentWithoutLoss: on a path that never loses, reorders or
// duplicates (lan), the stream changes nothing, so the run is the datagram
// run exactly.
func TestStreamTransparentWithoutLoss(t *testing.T) {
	d := runStream(t, "lan", 3, 300, 9, TransportDatagram)
	s := runStream(t, "lan", 3, 300, 9, TransportStream)
	if !slices.Equal(d.Latencies, s.Latencies) || d.Members[0].FinalHash != s.Members[0].FinalHash {
		t.Fatal("the stream changed a lossless run")
	}
	for i := range d.Members {
		if d.Members[i].Stats.BytesSent != s.Members[i].Stats.BytesSent {
			t.Fatalf("member %d: %d bytes over datagrams, %d over the stream", i, d.Members[i].Stats.BytesSent, s.Members[i].Stats.BytesSent)
		}
	}
	if s.Reliable[0].Retransmits != 0 || d.Reliable != nil {
		t.Fatalf("retransmissions %d on a lossless path, or stream stats %v for datagrams", s.Reliable[0].Retransmits, d.Reliable)
	}
}

func TestStreamSameSeedSameRun(t *testing.T) {
	a := runStream(t, "bad", 3, 300, 11, TransportStream)
	b := runStream(t, "bad", 3, 300, 11, TransportStream)
	if !slices.Equal(a.Latencies, b.Latencies) || !slices.Equal(a.OneWay, b.OneWay) || !slices.Equal(a.Reliable, b.Reliable) {
		t.Fatal("two runs of one seed differ")
	}
}

func TestRunRejectsUnknownTransport(t *testing.T) {
	_, err := Run(Config{Members: 2, Frames: 10, NewSim: func(bucket.Slot) lockstep.Simulation { return &NullSim{} },
		Profile: netsim.Profile{Phases: []netsim.Phase{{Duration: time.Second}}}, Transport: "carrier-pigeon"})
	if err == nil || errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want an unknown transport error", err)
	}
}

// BenchmarkMinuteOf8Stream is BenchmarkMinuteOf8 over the stream transport.
func BenchmarkMinuteOf8Stream(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		runStream(b, "broadband", 8, 1200, 1, TransportStream)
	}
}
