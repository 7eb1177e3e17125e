package wire

import "testing"

var benchPackets = []struct {
	name string
	p    func() Packet
}{
	{"typical", typicalPacket}, // header, echo, three 12-byte commands, hash report
	{"full", fullPacket},       // MaxDatagramSize bytes of 12-byte commands
}

func BenchmarkParse(b *testing.B) {
	for _, bp := range benchPackets {
		b.Run(bp.name, func(b *testing.B) {
			src := bp.p()
			data, err := src.Append(nil)
			if err != nil {
				b.Fatal(err)
			}
			p := Packet{Commands: make([]Command, 0, len(src.Commands))}
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := Parse(data, &p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppend(b *testing.B) {
	for _, bp := range benchPackets {
		b.Run(bp.name, func(b *testing.B) {
			p := bp.p()
			buf := make([]byte, 0, MaxDatagramSize)
			b.ReportAllocs()
			b.SetBytes(int64(p.Length()))
			for b.Loop() {
				var err error
				buf, err = p.Append(buf[:0])
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLength(b *testing.B) {
	for _, bp := range benchPackets {
		b.Run(bp.name, func(b *testing.B) {
			p := bp.p()
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n += p.Length()
			}
			if n == 0 {
				b.Fatal("zero length")
			}
		})
	}
}
