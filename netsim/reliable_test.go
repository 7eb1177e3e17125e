package netsim

import (
	"slices"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/rng"
)

const ms = time.Millisecond

// sendAll puts n one-byte segments on s, transmitted 10 ms apart.
func sendAll(t *testing.T, s *Reliable, n int) {
	t.Helper()
	for i := range n {
		seq := s.Send([]byte{byte(i)})
		if seq != uint64(i) {
			t.Fatalf("segment %d got sequence number %d", i, seq)
		}
		s.Transmit(time.Duration(i)*10*ms, seq)
	}
}

func TestReliableDeliversInOrderExactlyOnce(t *testing.T) {
	const n = 300
	r := rng.New(7, 7)
	s := NewReliable()
	sendAll(t, s, n)
	// Every segment arrives once or twice, shuffled within windows of 16.
	var arrivals []uint64
	dups := 0
	for i := range uint64(n) {
		arrivals = append(arrivals, i)
		if r.IntN(5) == 0 {
			arrivals = append(arrivals, i)
			dups++
		}
	}
	for lo := 0; lo < len(arrivals); lo += 16 {
		w := arrivals[lo:min(lo+16, len(arrivals))]
		for i := len(w) - 1; i > 0; i-- {
			j := r.IntN(i + 1)
			w[i], w[j] = w[j], w[i]
		}
	}
	var got []byte
	for _, seq := range arrivals {
		for _, d := range s.Arrive(seq, []byte{byte(seq)}) {
			got = append(got, d...)
		}
	}
	if len(got) != n {
		t.Fatalf("delivered %d segments, want %d", len(got), n)
	}
	for i, b := range got {
		if b != byte(i) {
			t.Fatalf("delivery %d carries segment %d", i, b)
		}
	}
	st := s.Stats()
	if st.Delivered != n || st.Duplicates != int64(dups) || st.Arrivals != int64(len(arrivals)) || st.Segments != n {
		t.Fatalf("stats %+v, want %d delivered, %d duplicates", st, n, dups)
	}
}

// TestReliableHeadOfLine loses the first of four segments by hand: the three
// behind it wait for its retransmission, which comes after the timeout.
func TestReliableHeadOfLine(t *testing.T) {
	s := NewReliable()
	sendAll(t, s, 4) // at 0, 10, 20, 30 ms; segment 0 is lost
	for seq := uint64(1); seq < 4; seq++ {
		if out := s.Arrive(seq, []byte{byte(seq)}); len(out) != 0 {
			t.Fatalf("segment %d delivered %d segments ahead of the missing one", seq, len(out))
		}
		s.Acked(time.Duration(seq)*10*ms+100*ms, seq, time.Duration(seq)*10*ms) // 100 ms round trips
	}
	if st := s.Stats(); st.Blocked != 3 || st.Delivered != 0 {
		t.Fatalf("stats %+v, want 3 blocked, none delivered", st)
	}
	// Segment 0 went out before any round trip was measured: its timer is
	// InitialRTO.
	if _, ok := s.Expired(InitialRTO-1, 0); ok {
		t.Fatal("timer fired early")
	}
	data, ok := s.Expired(InitialRTO, 0)
	if !ok || len(data) != 1 || data[0] != 0 {
		t.Fatalf("Expired = %v, %v; want segment 0", data, ok)
	}
	// Three 100 ms samples: RTTVAR 50, 37.5, 28.125 ms; RTO 100 + 112.5 ms.
	rto := s.RTO()
	if rto != 212500*time.Microsecond {
		t.Fatalf("RTO %v after three 100 ms samples, want 212.5ms", rto)
	}
	// The retransmission's timer is backed off: twice the RTO.
	if deadline := s.Transmit(InitialRTO, 0); deadline != InitialRTO+2*rto {
		t.Fatalf("retransmission deadline %v, want %v", deadline, InitialRTO+2*rto)
	}
	out := s.Arrive(0, []byte{0})
	var got []byte
	for _, d := range out {
		got = append(got, d...)
	}
	if !slices.Equal(got, []byte{0, 1, 2, 3}) {
		t.Fatalf("delivered %v after the retransmission, want [0 1 2 3]", got)
	}
	if out := s.Arrive(0, []byte{0}); len(out) != 0 || s.Stats().Duplicates != 1 {
		t.Fatalf("a late copy of segment 0 was delivered again (%d) or not counted", len(out))
	}
	s.Acked(InitialRTO+100*ms, 0, InitialRTO)
	if _, ok := s.Expired(InitialRTO+2*rto, 0); ok {
		t.Fatal("an acknowledged segment expired")
	}
	if st := s.Stats(); st.Retransmits != 1 || st.Delivered != 4 {
		t.Fatalf("stats %+v, want 1 retransmission, 4 delivered", st)
	}
}

// TestReliableRTO checks the RFC 6298 estimator with its floor and the
// backoff with its ceiling.
func TestReliableRTO(t *testing.T) {
	s := NewReliable()
	if s.RTO() != InitialRTO {
		t.Fatalf("RTO before samples %v, want %v", s.RTO(), InitialRTO)
	}
	sendAll(t, s, 3)
	s.Acked(400*ms, 0, 0) // R = 400 ms: SRTT 400, RTTVAR 200
	if srtt, v := s.SRTT(); srtt != 400*ms || v != 200*ms || s.RTO() != 1200*ms {
		t.Fatalf("after one sample SRTT %v RTTVAR %v RTO %v; want 400ms 200ms 1.2s", srtt, v, s.RTO())
	}
	s.Acked(210*ms, 1, 10*ms) // R = 200 ms: RTTVAR 3/4·200+1/4·200 = 200, SRTT 7/8·400+1/8·200 = 375
	if srtt, v := s.SRTT(); srtt != 375*ms || v != 200*ms {
		t.Fatalf("after two samples SRTT %v RTTVAR %v; want 375ms 200ms", srtt, v)
	}
	// Many equal samples: RTTVAR decays, the floor holds.
	for i := range 200 {
		seq := s.Send(nil)
		at := time.Second + time.Duration(i)*ms
		s.Transmit(at, seq)
		s.Acked(at+50*ms, seq, at)
	}
	if s.RTO() != MinRTO {
		t.Fatalf("RTO %v on a steady 50 ms path, want the floor %v", s.RTO(), MinRTO)
	}
	// Backoff: each retransmission doubles the timeout, up to MaxRTO.
	// Segment 2 went out once in sendAll and was never acknowledged: this
	// is its first retransmission.
	now := 10 * time.Second
	deadline := s.Transmit(now, 2)
	gaps := []time.Duration{deadline - now}
	for range 12 {
		if _, ok := s.Expired(deadline, 2); !ok {
			t.Fatal("segment 2 did not expire at its deadline")
		}
		now = deadline
		deadline = s.Transmit(now, 2)
		gaps = append(gaps, deadline-now)
	}
	want := []time.Duration{400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms, 25600 * ms, 51200 * ms, MaxRTO, MaxRTO, MaxRTO, MaxRTO, MaxRTO}
	if !slices.Equal(gaps, want) {
		t.Fatalf("backed-off timeouts %v, want %v", gaps, want)
	}
}

func TestReliableTransmitUnknownPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Transmit of a segment never sent did not panic")
		}
	}()
	NewReliable().Transmit(0, 3)
}

// BenchmarkReliableSegment is one segment's life on a stream: sent,
// transmitted, arrived in order, acknowledged.
func BenchmarkReliableSegment(b *testing.B) {
	s := NewReliable()
	data := make([]byte, 90)
	var now time.Duration
	b.ReportAllocs()
	for b.Loop() {
		now += ms
		seq := s.Send(data)
		s.Transmit(now, seq)
		s.Arrive(seq, data)
		s.Acked(now+100*ms, seq, now)
	}
}
