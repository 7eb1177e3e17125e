package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
)

// payload returns n bytes that differ from one call to the next.
func payload(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i)*7
	}
	return b
}

// commands returns n commands with payloads of size bytes, the first on frame
// first and each step frames after the previous one.
func commands(n int, first bucket.Frame, step bucket.Frame, size int) []Command {
	cs := make([]Command, n)
	for i := range cs {
		cs[i] = Command{Frame: first + bucket.Frame(i)*step, Payload: payload(size, byte(i))}
	}
	return cs
}

// typicalPacket is what a member sends most of the time: a header, an echo,
// three 12-byte commands and a hash report.
func typicalPacket() Packet {
	return Packet{
		Session: 0x5a17, From: 3, Number: 40123,
		Sent: 1_234_567 % (1 << 16), Clock: 1_230_000,
		Seal: 2461, Next: 9004, Ack: 8890, AckSeal: 2459,
		Lag:     42,
		HasEcho: true, Echo: Echo{Number: 17020, Hold: 12},
		Commands: commands(3, 2462, 1, 12),
		HasHash:  true, Hash: HashReport{Frame: 2440, State: 0x9e3779b97f4a7c15, Input: 0xc2b2ae3d27d4eb4f},
	}
}

// fullPacket returns a packet of exactly MaxDatagramSize bytes: all optional
// parts and as many 12-byte commands as fit, the last one padded.
func fullPacket() Packet {
	p := typicalPacket()
	p.Commands = nil
	for f := p.Seal + 1; ; f++ {
		c := Command{Frame: f, Payload: payload(12, byte(f))}
		p.Commands = append(p.Commands, c)
		if p.Length() > MaxDatagramSize {
			p.Commands = p.Commands[:len(p.Commands)-1]
			break
		}
	}
	last := &p.Commands[len(p.Commands)-1]
	for p.Length() < MaxDatagramSize {
		last.Payload = append(last.Payload, byte(len(last.Payload)))
	}
	return p
}

// testPackets are the representative packets round-tripped, truncated and
// used as fuzz seeds.
func testPackets() []struct {
	name string
	p    Packet
} {
	return []struct {
		name string
		p    Packet
	}{
		{"zero", Packet{}},
		{"admissions", Packet{Seal: 700, AckSeal: 700, Admissions: testAdmissions}},
		{"held seals", Packet{Seal: 700, AckSeal: 700, Seals: []HeldSeal{{Member: 1, Seal: 698, Next: 3}, {Member: 5, Seal: 702, Next: 300}, {Member: 63, Seal: -1, Next: 0xffff}}}},
		{"admissions and held seals", Packet{Seal: 10, AckSeal: 10, Admissions: testAdmissions[:1], Seals: []HeldSeal{{Member: 2, Seal: 9}}}},
		{"minimal", Packet{Seal: -1, AckSeal: -1}},
		{"echo only", Packet{Seal: 5, AckSeal: 7, HasEcho: true, Echo: Echo{Number: 0xffff, Hold: 3}}},
		{"hash only", Packet{Seal: 100, AckSeal: 99, HasHash: true, Hash: HashReport{Frame: 90, State: 1, Input: 2}}},
		{"hash before the first frame", Packet{Seal: -1, AckSeal: -1, HasHash: true, Hash: HashReport{Frame: -1}}},
		{"every optional part", typicalPacket()},
		{"seal -1 with commands from frame 0", Packet{
			Session: 1, Seal: -1, AckSeal: -1, Next: 2,
			Commands: []Command{{Frame: 0, Payload: []byte{1}}, {Frame: 0, Payload: []byte{2}}},
		}},
		{"many commands on one frame", Packet{Seal: 10, AckSeal: 10, Next: 50, Commands: commands(50, 11, 0, 5)}},
		{"many commands on increasing frames", Packet{Seal: 10, AckSeal: 3, Next: 60, Commands: commands(60, 11, 3, 4)}},
		{"frame gaps needing long deltas", Packet{Seal: 0, AckSeal: 0, Next: 3, Commands: []Command{
			{Frame: 1}, {Frame: 300}, {Frame: 1 << 39},
		}}},
		{"first command below the seal", Packet{Seal: 1000, AckSeal: 990, Next: 7, Commands: commands(3, 950, 20, 8)}},
		{"first command far below the seal", Packet{Seal: 1<<40 - 1, AckSeal: -1, Next: 1, Commands: []Command{{Frame: 0}}}},
		{"empty payloads", Packet{Seal: 4, AckSeal: 4, Next: 3, Commands: []Command{{Frame: 5}, {Frame: 5, Payload: []byte{}}, {Frame: 6}}}},
		{"200 empty commands (two-byte count)", Packet{Seal: -1, AckSeal: -1, Next: 200, Commands: commands(200, 0, 1, 0)}},
		{"largest values", Packet{
			Session: math.MaxUint16, From: math.MaxUint8, Number: math.MaxUint16,
			Sent: math.MaxUint16, Clock: math.MaxUint64,
			Seal: 1<<40 - 1, Next: math.MaxUint16, Ack: math.MaxUint16, AckSeal: 1<<40 - 1,
			Lag:     math.MaxUint64,
			HasEcho: true, Echo: Echo{Number: math.MaxUint16, Hold: math.MaxUint64},
			Commands: []Command{{Frame: 1<<40 - 1, Payload: []byte{0xff}}},
			HasHash:  true, Hash: HashReport{Frame: 1<<40 - 1, State: math.MaxUint64, Input: math.MaxUint64},
		}},
		{"one 1 KiB command", Packet{Seal: 20, AckSeal: 20, Next: 1, HasEcho: true, Commands: commands(1, 24, 0, 1024)}},
		{"exactly MaxDatagramSize", fullPacket()},
		{"membership", Packet{Seal: 30, AckSeal: 30, HasMembership: true, Membership: Membership{
			Suspected: 1<<2 | 1<<5 | 1<<63,
			Views:     []MemberView{{Held: 40, Seal: 41, Next: 7, Last: Unknown}, {Held: -1, Seal: -1, Next: 0, Last: -1}, {Held: 1<<40 - 1, Seal: 1<<40 - 1, Next: math.MaxUint32, Last: 1<<40 - 1}},
		}}},
		{"leave", Packet{Seal: 30, AckSeal: 30, HasLeave: true, LeaveFrame: 31}},
		{"relay", Packet{Seal: 30, AckSeal: 30, HasRelay: true, Relay: Relay{
			Member: 3, First: 70000, Seal: 33, Commands: commands(3, 31, 1, 6),
		}}},
		{"relayed seal alone", Packet{Seal: 30, AckSeal: 30, HasRelay: true, Relay: Relay{Member: 1, First: 9, Seal: 12}}},
		{"detail", Packet{Seal: 30, AckSeal: 30, HasDetail: true, Detail: Detail{
			Start: 20, Frames: []FrameHashes{{1, 2}, {3, 4}, {5, 6}}, Sections: []uint64{7, 8, 9},
		}}},
		{"detail without sections", Packet{Seal: 30, AckSeal: 30, HasDetail: true, Detail: Detail{
			Start: 0, Frames: make([]FrameHashes, MaxDetailFrames),
		}}},
		{"every block", func() Packet {
			p := typicalPacket()
			p.HasMembership, p.Membership = true, Membership{Suspected: 1, Views: []MemberView{{Held: 5, Seal: 5, Next: 2, Last: 5}}}
			p.HasLeave, p.LeaveFrame = true, 44
			p.HasRelay, p.Relay = true, Relay{Member: 0, First: 2, Seal: 5, Commands: []Command{{Frame: 4, Payload: []byte{9}}}}
			p.HasDetail, p.Detail = true, Detail{Start: 3, Frames: []FrameHashes{{1, 1}}, Sections: []uint64{2}}
			return p
		}()},
		{"every block, several of each", blockPacket()},
		{"every block, seal-only relay", func() Packet {
			p := blockPacket()
			p.Relay.Commands = nil
			return p
		}()},
		{"statement", Packet{Seal: 30, AckSeal: 30, Next: 2, Commands: commands(2, 31, 0, 3),
			HasStatement: true, Statement: Statement{Seal: 30, Count: 2, Signature: bytes.Repeat([]byte{0xab}, 64)}}},
		{"statement without a signature", Packet{Seal: 30, AckSeal: 30, HasStatement: true, Statement: Statement{Seal: -1}}},
		{"every block and both statements", func() Packet {
			p := blockPacket()
			p.HasStatement, p.Statement = true, Statement{Seal: 1<<40 - 1, Count: math.MaxUint32, Signature: bytes.Repeat([]byte{1}, MaxSignatureSize)}
			p.Relay.HasStatement, p.Relay.Statement = true, Statement{Seal: 5, Count: 3, Signature: bytes.Repeat([]byte{2}, 64)}
			p.Relay.Chain = [ChainSize]byte(bytes.Repeat([]byte{0x33}, ChainSize))
			return p
		}()},
	}
}

// mustAppend encodes p and checks that it took exactly p.Length() bytes and
// left the prefix alone.
func mustAppend(t testing.TB, p *Packet) []byte {
	t.Helper()
	prefix := []byte("prefix")
	b, err := p.Append(bytes.Clone(prefix))
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if !bytes.Equal(b[:len(prefix)], prefix) {
		t.Fatalf("Append changed the prefix: %q", b[:len(prefix)])
	}
	b = b[len(prefix):]
	if len(b) != p.Length() {
		t.Fatalf("Append wrote %d bytes, Length says %d", len(b), p.Length())
	}
	return b
}

// normalized returns a copy of p in which no commands is nil and an empty
// payload is nil, so that packets equal on the wire compare equal.
func normalized(p Packet) Packet {
	if len(p.Statement.Signature) == 0 {
		p.Statement.Signature = nil
	}
	if len(p.Relay.Statement.Signature) == 0 {
		p.Relay.Statement.Signature = nil
	}
	if len(p.Membership.Views) == 0 {
		p.Membership.Views = nil
	}
	if len(p.Detail.Frames) == 0 {
		p.Detail.Frames = nil
	}
	if len(p.Detail.Sections) == 0 {
		p.Detail.Sections = nil
	}
	if len(p.Relay.Commands) > 0 {
		rc := make([]Command, len(p.Relay.Commands))
		for i, c := range p.Relay.Commands {
			rc[i] = c
			if len(c.Payload) == 0 {
				rc[i].Payload = nil
			}
		}
		p.Relay.Commands = rc
	} else {
		p.Relay.Commands = nil
	}
	if len(p.Commands) == 0 {
		p.Commands = nil
		return p
	}
	cs := make([]Command, len(p.Commands))
	for i, c := range p.Commands {
		cs[i] = c
		if len(c.Payload) == 0 {
			cs[i].Payload = nil
		}
	}
	p.Commands = cs
	return p
}

func equalPackets(a, b Packet) bool {
	return reflect.DeepEqual(normalized(a), normalized(b))
}

func TestRoundTrip(t *testing.T) {
	for _, tt := range testPackets() {
		t.Run(tt.name, func(t *testing.T) {
			b := mustAppend(t, &tt.p)
			if len(b) > MaxDatagramSize {
				t.Fatalf("test packet of %d bytes exceeds MaxDatagramSize", len(b))
			}
			if got := Kind(b[0]); got != KindLockstep {
				t.Errorf("kind %#x, want %#x", got, KindLockstep)
			}
			var got Packet
			if err := Parse(b, &got); err != nil {
				t.Fatalf("Parse: %v\n% x", err, b)
			}
			if !equalPackets(got, tt.p) {
				t.Fatalf("Parse(Append(p)) differs\n got %+v\nwant %+v", got, tt.p)
			}
			// The re-encoding of the decoded packet is the same bytes.
			if again := mustAppend(t, &got); !bytes.Equal(again, b) {
				t.Fatalf("re-encoding differs\n got % x\nwant % x", again, b)
			}
		})
	}
}

func TestExactlyMaxDatagramSize(t *testing.T) {
	p := fullPacket()
	b := mustAppend(t, &p)
	if len(b) != MaxDatagramSize {
		t.Fatalf("full packet is %d bytes, want %d", len(b), MaxDatagramSize)
	}
	if len(p.Commands) < 50 {
		t.Errorf("only %d commands fit in a full packet", len(p.Commands))
	}
	var got Packet
	if err := Parse(b, &got); err != nil {
		t.Fatalf("Parse of a %d-byte datagram: %v", len(b), err)
	}
	// One more byte of payload makes it too large for the decoder.
	p.Commands[len(p.Commands)-1].Payload = append(p.Commands[len(p.Commands)-1].Payload, 0)
	b = mustAppend(t, &p)
	err := Parse(b, &got)
	if !errors.Is(err, ErrMalformed) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Parse of %d bytes: %v, want ErrMalformed and ErrTooLarge", len(b), err)
	}
}

func TestFlags(t *testing.T) {
	tests := []struct {
		name string
		p    Packet
		want byte
	}{
		{"none", Packet{}, 0},
		{"empty but non-nil commands", Packet{Commands: []Command{}}, 0},
		{"echo", Packet{HasEcho: true}, flagEcho},
		{"commands", Packet{Commands: []Command{{Frame: 1}}}, flagCommands},
		{"hash", Packet{HasHash: true}, flagHash},
		{"all", Packet{HasEcho: true, HasHash: true, Commands: []Command{{Frame: 1}}}, flagEcho | flagCommands | flagHash},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustAppend(t, &tt.p)
			if b[6] != tt.want {
				t.Errorf("flags byte %#02x, want %#02x", b[6], tt.want)
			}
		})
	}
}

// TestFixedLayout checks the offsets and byte order of the fixed header.
func TestFixedLayout(t *testing.T) {
	p := Packet{Session: 0x0102, From: 0x03, Number: 0x0405, Next: 0x0607, Ack: 0x0809, Seal: -1, AckSeal: 0, Sent: 300}
	b := mustAppend(t, &p)
	want := []byte{
		0x01,       // kind
		0x02, 0x01, // session
		0x03,       // from
		0x05, 0x04, // number
		0x00,       // flags
		0x87, 0x0c, // next 0x0607 as a varint
		0x89, 0x10, // ack 0x0809 as a varint
		0x2c, 0x01, // sent 300
		0x00, // clock 0
		0x00, // seal -1 as 0
		0x02, // ack seal 0: zigzag(0 - seal -1)
		0x00, // path delay
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("got  % x\nwant % x", b, want)
	}
}

func TestCommandLength(t *testing.T) {
	for _, tt := range testPackets() {
		if len(tt.p.Commands) < 2 {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			for k := 1; k < len(tt.p.Commands); k++ {
				p.Commands = tt.p.Commands[:k]
				before := p.Length()
				p.Commands = tt.p.Commands[:k+1]
				grew := p.Length() - before
				want := CommandLength(tt.p.Commands[k-1].Frame, tt.p.Commands[k])
				if uvarintLen(uint64(k+1)) != uvarintLen(uint64(k)) {
					want++ // the count itself took one more byte
				}
				if grew != want {
					t.Fatalf("command %d grew the packet by %d bytes, CommandLength says %d", k, grew, want)
				}
			}
		})
	}
}

func TestAppendErrors(t *testing.T) {
	tests := []struct {
		name string
		p    Packet
	}{
		{"decreasing frames", Packet{Commands: []Command{{Frame: 5}, {Frame: 4}}}},
		{"decreasing after equal", Packet{Commands: []Command{{Frame: 5}, {Frame: 5}, {Frame: 6}, {Frame: 2}}}},
		{"negative command frame", Packet{Seal: -1, Commands: []Command{{Frame: -1}}}},
		{"very negative command frame", Packet{Commands: []Command{{Frame: math.MinInt64}}}},
		{"command frame 2^40", Packet{Commands: []Command{{Frame: 1 << 40}}}},
		{"seal below -1", Packet{Seal: -2}},
		{"ack seal below -1", Packet{AckSeal: -2}},
		{"hash frame below -1", Packet{HasHash: true, Hash: HashReport{Frame: -2}}},
		{"seal 2^40", Packet{Seal: 1 << 40}},
		{"ack seal 2^40", Packet{AckSeal: math.MaxInt64}},
		{"hash frame 2^40", Packet{HasHash: true, Hash: HashReport{Frame: 1 << 40}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte("keep")
			b, err := tt.p.Append(in)
			if err == nil {
				t.Fatalf("Append succeeded: % x", b)
			}
			if !bytes.Equal(b, []byte("keep")) {
				t.Errorf("Append returned % x on error, want the input unchanged", b)
			}
		})
	}
	// A hash frame out of range does not matter without a hash report.
	p := Packet{Hash: HashReport{Frame: -5}}
	if _, err := p.Append(nil); err != nil {
		t.Errorf("Append with an unused hash frame: %v", err)
	}
}

// header returns the fixed header of a lockstep datagram with the given flags.
func header(flags byte) []byte {
	return []byte{byte(KindLockstep), 0x34, 0x12, 1, 0x10, 0x00, flags, 0x05, 0x03}
}

// cat joins byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// uv returns the minimal varint encoding of v.
func uv(v uint64) []byte { return binary.AppendUvarint(nil, v) }

// timing is a valid timing-and-seals section: sent 1, clock 2, seal 9, ack
// seal 9 (the same), path delay 3.
var timing = []byte{0x01, 0x00, 0x02, 10, 0x00, 0x03}

func TestParseErrors(t *testing.T) {
	valid := typicalPacket()
	validBytes := mustAppend(t, &valid)
	tooLarge := fullPacket()
	tooLarge.Commands[0].Payload = append(tooLarge.Commands[0].Payload, 1)

	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"kind 0x00", cat([]byte{0x00}, validBytes[1:])},
		{"kind 0x02 (entity, not a lockstep packet)", cat([]byte{byte(KindEntity)}, validBytes[1:])},
		{"kind 0xff", cat([]byte{0xff}, validBytes[1:])},
		{"wrong kind, one byte", []byte{0x02}},
		{"reasons flag without membership", cat(header(1<<7), timing)},
		{"reasons flag, membership view without its reason byte", cat(header(flagMembership|flagReasons), timing, uv(1), []byte{0, 0, 0, 0})},
		{"reasons flag with every known flag, nothing after the header", cat(header(0xff), timing)},
		{"reasons and echo flags", cat(header(flagEcho|1<<7), timing, []byte{0, 0, 0})},
		{"command count 0", cat(header(flagCommands), timing, uv(0))},
		{"command count larger than the bytes allow", cat(header(flagCommands), timing, uv(10), []byte{0, 0, 0, 0})},
		{"command count 2^15+1 (beyond any datagram)", cat(header(flagCommands), timing, uv(1<<15+1), make([]byte, 1100))},
		{"command count huge", cat(header(flagCommands), timing, uv(math.MaxUint64), []byte{0, 0})},
		{"fewer commands than counted", cat(header(flagCommands), timing, uv(2), []byte{0, 0, 0})},
		{"payload longer than the datagram", cat(header(flagCommands), timing, uv(1), uv(2), uv(50), []byte{1, 2, 3})},
		{"payload length huge", cat(header(flagCommands), timing, uv(1), uv(2), uv(math.MaxUint64), []byte{1, 2, 3})},
		{"varint overflow: 10 continuation bytes", cat(header(0), bytes.Repeat([]byte{0x80}, 10), []byte{0x01, 0, 1, 1, 0})},
		{"varint overflow: 11 continuation bytes", cat(header(0), bytes.Repeat([]byte{0x80}, 11), []byte{0x01, 0, 1, 1, 0})},
		{"varint overflow: tenth byte above 1", cat(header(0), bytes.Repeat([]byte{0xff}, 9), []byte{0x02, 0, 1, 1, 0})},
		{"varint overflow in echo hold", cat(header(flagEcho), timing, []byte{1, 2}, bytes.Repeat([]byte{0xff}, 10), []byte{0x01})},
		{"varint overflow in payload length", cat(header(flagCommands), timing, uv(1), uv(2), bytes.Repeat([]byte{0x81}, 10), []byte{0x01})},
		{"seal out of range", cat(header(0), []byte{0, 0, 0}, uv(1<<40+1), uv(1), uv(0))},
		{"ack seal out of range", cat(header(0), []byte{0, 0, 0}, uv(1), uv(math.MaxUint64), uv(0))},
		{"hash frame out of range", cat(header(flagHash), timing, uv(1<<40+1), make([]byte, 16))},
		{"first command frame negative", cat(header(flagCommands), []byte{0, 0, 0}, uv(0), uv(0), uv(0), uv(1), uv(zigzag(-1)), uv(0))},
		{"first command frame far below zero", cat(header(flagCommands), timing, uv(1), uv(zigzag(math.MinInt64)), uv(0))},
		{"first command frame 2^40", cat(header(flagCommands), []byte{0, 0, 0}, uv(0), uv(0), uv(0), uv(1), uv(zigzag(1<<40+1)), uv(0))},
		{"first command frame wraps int64", cat(header(flagCommands), timing, uv(1), uv(zigzag(math.MaxInt64)), uv(0))},
		{"command frame delta above 2^40", cat(header(flagCommands), timing, uv(2), uv(zigzag(1)), uv(0), uv(1<<40+1), uv(0))},
		{"command frame delta reaches 2^40", cat(header(flagCommands), timing, uv(2), uv(zigzag(1)), uv(0), uv(1<<40-10), uv(0))},
		{"command frame delta huge", cat(header(flagCommands), timing, uv(2), uv(zigzag(1)), uv(0), uv(math.MaxUint64), uv(0))},
		{"trailing byte", cat(validBytes, []byte{0})},
		{"trailing bytes after a minimal packet", cat(header(0), timing, []byte{1, 2, 3})},
		{"hash report cut short", cat(header(flagHash), timing, uv(3), make([]byte, 15))},
		{"larger than MaxDatagramSize", mustAppend(t, &tooLarge)},
		{"64 KiB of zeros", make([]byte, 1<<16)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Packet{Commands: make([]Command, 0, 4)}
			err := Parse(tt.b, &p)
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", p)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			if cap(p.Commands) < 4 {
				t.Errorf("Parse dropped the command storage on error: cap %d", cap(p.Commands))
			}
		})
	}
}

// TestParseHandBuilt checks that the hand-built pieces the error cases use
// decode when put together correctly, so each error case fails for its
// stated reason.
func TestParseHandBuilt(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
	}{
		{"minimal", cat(header(0), timing)},
		{"echo", cat(header(flagEcho), timing, []byte{1, 2}, uv(7))},
		{"one command", cat(header(flagCommands), timing, uv(1), uv(2), uv(3), []byte{1, 2, 3})},
		{"first command frame 0", cat(header(flagCommands), []byte{0, 0, 0}, uv(0), uv(0), uv(0), uv(1), uv(zigzag(1)), uv(0))},
		{"first command frame 2^40-1", cat(header(flagCommands), []byte{0, 0, 0}, uv(0), uv(0), uv(0), uv(1), uv(zigzag(1<<40)), uv(0))},
		{"command frame delta up to 2^40-1", cat(header(flagCommands), timing, uv(2), uv(zigzag(1)), uv(0), uv(1<<40-11), uv(0))},
		{"hash", cat(header(flagHash), timing, uv(3), make([]byte, 16))},
		{"seal 2^40-1", cat(header(0), []byte{0, 0, 0}, uv(1<<40), uv(1), uv(0))},
		{"varint of nine 0xff and a 1", cat(header(0), []byte{0, 0}, bytes.Repeat([]byte{0xff}, 9), []byte{0x01, 1, 0, 0})},
		{"non-minimal varints", cat(header(0), []byte{0x00, 0x00, 0x81, 0x80, 0x00, 0x80, 0x00, 0x80, 0x00, 0x80, 0x80, 0x00})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Packet
			if err := Parse(tt.b, &p); err != nil {
				t.Fatalf("Parse: %v", err)
			}
		})
	}
}

func TestParseSessionHeader(t *testing.T) {
	var p Packet
	if err := Parse(cat(header(0), timing), &p); err != nil {
		t.Fatal(err)
	}
	want := Packet{Session: 0x1234, From: 1, Number: 0x10, Next: 5, Ack: 3, Sent: 1, Clock: 2, Seal: 9, AckSeal: 9, Lag: 3}
	if !equalPackets(p, want) {
		t.Fatalf("got %+v\nwant %+v", p, want)
	}
}

// TestTruncated cuts representative datagrams at every byte: no proper prefix
// of a datagram decodes, and none makes Parse panic. The one exception is a
// cut between extension blocks: the extension blocks are optional, so a
// datagram cut where one begins is the datagram without them.
func TestTruncated(t *testing.T) {
	for _, tt := range testPackets() {
		t.Run(tt.name, func(t *testing.T) {
			b := mustAppend(t, &tt.p)
			bare := tt.p
			bare.HasStatement, bare.Relay.HasStatement, bare.Admissions, bare.Seals = false, false, nil, nil
			ext := map[int]bool{bare.Length(): true}
			if tt.p.HasStatement {
				bare.HasStatement = true
				ext[bare.Length()] = true
			}
			if bare.HasRelay && tt.p.Relay.HasStatement {
				bare.Relay.HasStatement = true
				ext[bare.Length()] = true
			}
			if len(tt.p.Admissions) > 0 {
				bare.Admissions = tt.p.Admissions
				ext[bare.Length()] = true
			}
			p := Packet{Commands: make([]Command, 0, 8)}
			for i := range len(b) {
				cut := bytes.Clone(b[:i]) // no spare capacity to read past
				err := Parse(cut, &p)
				if err == nil && ext[i] {
					continue
				}
				if err == nil {
					t.Fatalf("Parse of the first %d of %d bytes succeeded", i, len(b))
				}
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("Parse of the first %d bytes: %v does not wrap ErrMalformed", i, err)
				}
			}
		})
	}
}

// TestPayloadsAlias checks that payloads point into the datagram and that
// appending to one cannot overwrite the bytes after it.
func TestPayloadsAlias(t *testing.T) {
	src := typicalPacket()
	b := mustAppend(t, &src)
	orig := bytes.Clone(b)
	var p Packet
	if err := Parse(b, &p); err != nil {
		t.Fatal(err)
	}
	c := p.Commands[0]
	i := bytes.Index(b, src.Commands[0].Payload)
	if i < 0 || &c.Payload[0] != &b[i] {
		t.Fatalf("payload does not alias the datagram")
	}
	if cap(c.Payload) != len(c.Payload) {
		t.Errorf("payload capacity %d exceeds its length %d", cap(c.Payload), len(c.Payload))
	}
	_ = append(c.Payload, 0xee, 0xee)
	if !bytes.Equal(b, orig) {
		t.Fatalf("appending to a payload changed the datagram")
	}
}

func TestParseReusesCommands(t *testing.T) {
	src := fullPacket()
	b := mustAppend(t, &src)
	p := Packet{Commands: make([]Command, 0, len(src.Commands))}
	storage := &p.Commands[:1][0]
	allocs := testing.AllocsPerRun(100, func() {
		if err := Parse(b, &p); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Parse allocated %.1f times per run, want 0", allocs)
	}
	if &p.Commands[0] != storage {
		t.Errorf("Parse did not decode into the given command storage")
	}

	// A malformed datagram keeps the storage for the next one.
	if err := Parse(b[:len(b)-1], &p); err == nil {
		t.Fatal("Parse of a truncated datagram succeeded")
	}
	if cap(p.Commands) != len(src.Commands) {
		t.Fatalf("after an error: cap %d, want %d", cap(p.Commands), len(src.Commands))
	}
	// Also when decoding fails before the commands.
	if err := Parse(b[:5], &p); err == nil {
		t.Fatal("Parse of a 5-byte datagram succeeded")
	}
	if cap(p.Commands) != len(src.Commands) {
		t.Fatalf("after an error in the header: cap %d, want %d", cap(p.Commands), len(src.Commands))
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = Parse(b, &p) }); allocs != 0 {
		t.Errorf("Parse after an error allocated %.1f times per run, want 0", allocs)
	}

	// A packet without commands leaves an empty slice with the storage.
	small := Packet{Seal: 3}
	if err := Parse(mustAppend(t, &small), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Commands) != 0 || cap(p.Commands) != len(src.Commands) {
		t.Errorf("after a packet without commands: len %d cap %d", len(p.Commands), cap(p.Commands))
	}
}

func TestParseClearsPreviousPacket(t *testing.T) {
	full := typicalPacket()
	var p Packet
	if err := Parse(mustAppend(t, &full), &p); err != nil {
		t.Fatal(err)
	}
	small := Packet{Seal: -1, AckSeal: 4}
	if err := Parse(mustAppend(t, &small), &p); err != nil {
		t.Fatal(err)
	}
	if !equalPackets(p, small) {
		t.Fatalf("got %+v\nwant %+v", p, small)
	}
}

func TestZigzag(t *testing.T) {
	tests := []struct {
		v int64
		u uint64
	}{
		{0, 0}, {-1, 1}, {1, 2}, {-2, 3}, {2, 4},
		{math.MaxInt64, math.MaxUint64 - 1}, {math.MinInt64, math.MaxUint64},
	}
	for _, tt := range tests {
		if got := zigzag(tt.v); got != tt.u {
			t.Errorf("zigzag(%d) = %d, want %d", tt.v, got, tt.u)
		}
		if got := unzigzag(tt.u); got != tt.v {
			t.Errorf("unzigzag(%d) = %d, want %d", tt.u, got, tt.v)
		}
	}
}

func TestUvarintLen(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 16383, 16384, 1 << 40, math.MaxUint64} {
		if got, want := uvarintLen(v), len(uv(v)); got != want {
			t.Errorf("uvarintLen(%d) = %d, want %d", v, got, want)
		}
	}
}

func TestUnwrap16(t *testing.T) {
	tests := []struct {
		name string
		ref  uint32
		v    uint16
		want uint32
	}{
		{"zero", 0, 0, 0},
		{"equal", 1000, 1000, 1000},
		{"slightly ahead", 1000, 1005, 1005},
		{"slightly behind", 1000, 990, 990},
		{"wrap forward across 0xffff", 0xfffe, 0x0001, 0x10001},
		{"wrap forward in a later cycle", 0x3fffe, 0x0003, 0x40003},
		{"wrap backward across 0", 0x10001, 0xfffe, 0xfffe},
		{"wrap backward in a later cycle", 0x50002, 0xfff0, 0x4fff0},
		{"near zero: behind would be negative", 5, 0xffff, 0xffff},
		{"near zero: far behind", 0, 0x8000, 0x8000},
		{"near zero: just under half behind", 100, 0x8100, 0x8100},
		{"ahead by 2^15-1", 0x10000, 0x7fff, 0x17fff},
		{"behind by 2^15 (the tie goes back)", 0x18000, 0x0000, 0x10000},
		{"ahead by 2^15+1 is behind", 0x10000, 0x8001, 0x8001},
		{"far ahead", 0x1_0000_0000 - 0x10000, 0x1234, 0xffff_1234},
		{"top of the range: ahead would overflow", math.MaxUint32 - 2, 0x0005, 0xffff_0005},
		{"top of the range: exact", math.MaxUint32, 0xffff, math.MaxUint32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Unwrap16(tt.ref, tt.v)
			if got != tt.want {
				t.Fatalf("Unwrap16(%#x, %#x) = %#x, want %#x", tt.ref, tt.v, got, tt.want)
			}
			if uint16(got) != tt.v {
				t.Fatalf("low 16 bits of %#x are not %#x", got, tt.v)
			}
		})
	}
}

// TestUnwrap16Nearest checks, over a sweep of references, that the result is
// the full value nearest to the reference among those with the given low bits.
func TestUnwrap16Nearest(t *testing.T) {
	refs := []uint32{0, 1, 0x7fff, 0x8000, 0xffff, 0x10000, 0x12345, 0xfffe_0000, math.MaxUint32}
	for _, ref := range refs {
		for d := int64(-1 << 15); d < 1<<15; d += 97 {
			full := int64(ref) + d
			if full < 0 || full > math.MaxUint32 {
				continue
			}
			if got := Unwrap16(ref, uint16(full)); int64(got) != full {
				t.Fatalf("Unwrap16(%#x, %#x) = %#x, want %#x", ref, uint16(full), got, full)
			}
		}
	}
}

func TestUnwrapTicks16(t *testing.T) {
	for _, tt := range []struct{ ref, v, want Ticks }{
		{0, 5, 5},
		{100_000, 100_000 % (1 << 16), 100_000},
		{100_000, (100_000 + 30_000) % (1 << 16), 130_000},
		{100_000, (100_000 - 30_000) % (1 << 16), 70_000},
		{1 << 16, 0xFFFF, 1<<16 - 1},
		{10, 0xFFF0, 0xFFF0}, // never below zero
		{1<<40 + 7, 9, 1<<40 + 9},
	} {
		if got := UnwrapTicks16(tt.ref, tt.v); got != tt.want {
			t.Errorf("UnwrapTicks16(%d, %d) = %d, want %d", tt.ref, tt.v, got, tt.want)
		}
	}
}

// TestHeldSealsLayout pins the example of docs/protocol.md, "Held seals".
func TestHeldSealsLayout(t *testing.T) {
	p := Packet{Seal: 100, AckSeal: 100, Seals: []HeldSeal{{Member: 1, Seal: 98, Next: 5}, {Member: 5, Seal: 102, Next: 257}}}
	bare := p
	bare.Seals = nil
	b := mustAppend(t, &p)
	got := b[bare.Length():]
	want := []byte{0x04, 0x22, 0x03, 0x05, 0x04, 0x81, 0x02}
	if !bytes.Equal(got, want) {
		t.Fatalf("held seals block % x, want % x", got, want)
	}
	var q Packet
	if err := Parse(b, &q); err != nil || len(q.Seals) != 2 || q.Seals[1] != p.Seals[1] {
		t.Fatalf("Parse: %v, %+v", err, q.Seals)
	}
}
