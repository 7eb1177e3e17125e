package cmdstream

import "testing"

func BenchmarkStreamInsert(b *testing.B) {
	payload := []byte("0123456789abcdef")
	s := NewStream(1, -1)
	var seq uint32
	b.ReportAllocs()
	for b.Loop() {
		// Four commands a frame, in order, trimmed as the engine would.
		if _, err := s.Insert(Command{Slot: 1, Seq: seq, Frame: Frame(seq / 4), Payload: payload}); err != nil {
			b.Fatal(err)
		}
		seq++
		if seq%1024 == 0 {
			s.Trim(seq - 64)
		}
	}
}

func BenchmarkTableAppendBucket(b *testing.B) {
	const members, frames, perFrame = 8, 512, 2
	t := NewTable(members, -1)
	payload := []byte("0123456789abcdef")
	for slot := range Slot(members) {
		s := t.Stream(slot)
		for f := range Frame(frames) {
			for range perFrame {
				s.Append(Command{Slot: slot, Seq: s.Next(), Frame: f, Payload: payload})
			}
		}
		s.SetSeal(frames)
	}
	dst := make([]Command, 0, members*perFrame)
	var f Frame
	b.ReportAllocs()
	for b.Loop() {
		dst = t.AppendBucket(dst[:0], f)
		if len(dst) != members*perFrame {
			b.Fatalf("bucket %d has %d commands", f, len(dst))
		}
		f = (f + 1) % frames
	}
}
