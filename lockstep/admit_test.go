package lockstep_test

import (
	"errors"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// TestJoinRequestForALiveSlotIsRefused: a joiner claiming the slot of a
// member the others still listen to is never admitted, and its requests
// change nothing of what the member knows of that slot's real holder.
func TestJoinRequestForALiveSlotIsRefused(t *testing.T) {
	a := newCore(t, memberConfig(2, 0), 0)
	b := newCore(t, memberConfig(2, 1), 0)
	cfg := memberConfig(2, 1)
	cfg.Join = true
	j := newCore(t, cfg, 0)
	if _, err := j.Submit(0, []byte("x")); !errors.Is(err, lockstep.ErrJoining) {
		t.Fatalf("a joiner's Submit: %v, want ErrJoining", err)
	}
	var p wire.Packet
	for now := time.Duration(0); now < 3*time.Second; now += 10 * time.Millisecond {
		for _, d := range b.Ready(now).Datagrams {
			a.Receive(now, 1, d.Data)
		}
		for _, d := range j.Ready(now).Datagrams {
			if err := wire.Parse(d.Data, &p); err != nil || len(p.Admissions) != 1 || p.Admissions[0].Flags != wire.AdmitRequest {
				t.Fatalf("a joiner's datagram: %v, %+v", err, p.Admissions)
			}
			a.Receive(now, 1, d.Data)
		}
		rd := a.Ready(now)
		for _, d := range rd.Datagrams {
			if err := wire.Parse(d.Data, &p); err != nil || len(p.Admissions) != 0 {
				t.Fatalf("member 0 answers with admissions %+v (%v)", p.Admissions, err)
			}
			b.Receive(now, 0, d.Data)
		}
		for _, e := range rd.Events {
			t.Fatalf("member 0 reports %v", e)
		}
	}
	if j.AdmittedAt() != -1 || !j.Joining() || a.Stats().Violations != 0 || !a.Listening(1) || a.Executed() < 50 {
		t.Fatalf("joiner admitted at %d (joining %v); member 0: %d violations, listening to 1: %v, executed %d",
			j.AdmittedAt(), j.Joining(), a.Stats().Violations, a.Listening(1), a.Executed())
	}
}
