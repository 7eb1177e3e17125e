package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/internal/golden"
)

// Tests of the optional blocks of flag bits 3–6: membership, leave, relay
// and detail. Their round trips are in testPackets (packet_test.go).

// Hand-built pieces of the optional blocks, each valid on its own.
var (
	// view is one member view: Held 4, Seal 5, Next 6, Last 7.
	view = cat(uv(5), uv(6), uv(6), uv(9))
	// relayHead is a relay's member 3, First 9 and Seal 9.
	relayHead = cat([]byte{3}, uv(9), uv(10))
	// detailHead is a detail's Start frame 9.
	detailHead = uv(10)
)

// hashes returns n zeroed 8-byte hashes.
func hashes(n int) []byte { return make([]byte, 8*n) }

// TestParseHandBuiltBlocks checks that the hand-built blocks the error cases
// below start from decode when complete, so each error case fails for its
// stated reason.
func TestParseHandBuiltBlocks(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want func(p *Packet) bool
	}{
		{"membership, one view", cat(header(flagMembership), timing, uv(1<<4), view), func(p *Packet) bool {
			return p.HasMembership && p.Membership.Suspected == 1<<4 &&
				len(p.Membership.Views) == 1 && p.Membership.Views[0] == MemberView{Held: 4, Seal: 5, Next: 6, Last: 7}
		}},
		{"membership, nobody suspected", cat(header(flagMembership), timing, uv(0)), func(p *Packet) bool {
			return p.HasMembership && p.Membership.Suspected == 0 && len(p.Membership.Views) == 0
		}},
		{"membership, 64 views", cat(header(flagMembership), timing, uv(math.MaxUint64), bytes.Repeat(view, 64)), func(p *Packet) bool {
			return len(p.Membership.Views) == 64
		}},
		{"member view at its largest values", cat(header(flagMembership), timing, uv(1), uv(1<<40), uv(1<<40), uv(1<<32-1), uv(1<<40+1)), func(p *Packet) bool {
			v := p.Membership.Views[0]
			return v == MemberView{Held: 1<<40 - 1, Seal: 1<<40 - 1, Next: math.MaxUint32, Last: 1<<40 - 1}
		}},
		{"member view at its smallest values", cat(header(flagMembership), timing, uv(1), uv(0), uv(0), uv(0), uv(0)), func(p *Packet) bool {
			return p.Membership.Views[0] == MemberView{Held: -1, Seal: -1, Next: 0, Last: Unknown}
		}},
		{"leave", cat(header(flagLeave), timing, uv(0)), func(p *Packet) bool { return p.HasLeave && p.LeaveFrame == -1 }},
		{"leave 2^40-1", cat(header(flagLeave), timing, uv(1<<40)), func(p *Packet) bool { return p.LeaveFrame == 1<<40-1 }},
		{"relayed seal alone", cat(header(flagRelay), timing, relayHead, []byte{0x00}), func(p *Packet) bool {
			rl := p.Relay
			return p.HasRelay && rl.Member == 3 && rl.First == 9 && rl.Seal == 9 && len(rl.Commands) == 0
		}},
		{"relay, one command", cat(header(flagRelay), timing, relayHead, uv(1), uv(zigzag(1)), uv(2), []byte{7, 8}), func(p *Packet) bool {
			return len(p.Relay.Commands) == 1 && p.Relay.Commands[0].Frame == 10 && bytes.Equal(p.Relay.Commands[0].Payload, []byte{7, 8})
		}},
		{"relay First 2^32-1", cat(header(flagRelay), timing, []byte{0}, uv(1<<32-1), uv(0), []byte{0}), func(p *Packet) bool {
			return p.Relay.First == math.MaxUint32 && p.Relay.Seal == -1
		}},
		{"detail, one frame", cat(header(flagDetail), timing, detailHead, uv(1), hashes(2), uv(0)), func(p *Packet) bool {
			return p.HasDetail && p.Detail.Start == 9 && len(p.Detail.Frames) == 1 && len(p.Detail.Sections) == 0
		}},
		{"detail at its limits", cat(header(flagDetail), timing, uv(1<<40), uv(MaxDetailFrames), hashes(2*MaxDetailFrames), uv(MaxSections), hashes(MaxSections)), func(p *Packet) bool {
			return p.Detail.Start == 1<<40-1 && len(p.Detail.Frames) == MaxDetailFrames && len(p.Detail.Sections) == MaxSections
		}},
		{"every block", cat(header(flagMembership|flagLeave|flagRelay|flagDetail), timing,
			uv(1), view, uv(20), relayHead, []byte{0}, detailHead, uv(1), hashes(2), uv(1), hashes(1)), func(p *Packet) bool {
			return p.HasMembership && p.HasLeave && p.LeaveFrame == 19 && p.HasRelay && p.HasDetail && len(p.Detail.Sections) == 1
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Packet
			if err := Parse(tt.b, &p); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !tt.want(&p) {
				t.Fatalf("decoded %+v", p)
			}
		})
	}
}

func TestParseBlockErrors(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
	}{
		// Membership.
		{"membership without its mask", cat(header(flagMembership), timing)},
		{"membership mask cut short", cat(header(flagMembership), timing, []byte{0x81})},
		{"membership mask overflows 64 bits", cat(header(flagMembership), timing, bytes.Repeat([]byte{0xff}, 10), []byte{0x01})},
		{"one suspected, no view", cat(header(flagMembership), timing, uv(1))},
		{"two suspected, one view", cat(header(flagMembership), timing, uv(0b101), view)},
		{"64 suspected, far fewer views", cat(header(flagMembership), timing, uv(math.MaxUint64), bytes.Repeat(view, 3))},
		{"64 suspected, 63 views", cat(header(flagMembership), timing, uv(math.MaxUint64), bytes.Repeat(view, 63))},
		{"view cut after Held", cat(header(flagMembership), timing, uv(1), uv(5))},
		{"view cut after Seal", cat(header(flagMembership), timing, uv(1), uv(5), uv(6))},
		{"view cut before Last", cat(header(flagMembership), timing, uv(1), uv(5), uv(6), uv(6))},
		{"view Held out of range", cat(header(flagMembership), timing, uv(1), uv(1<<40+1), uv(6), uv(6), uv(9))},
		{"view Seal out of range", cat(header(flagMembership), timing, uv(1), uv(5), uv(math.MaxUint64), uv(6), uv(9))},
		{"view Next beyond 32 bits", cat(header(flagMembership), timing, uv(1), uv(5), uv(6), uv(1<<32), uv(9))},
		{"view Next huge", cat(header(flagMembership), timing, uv(1), uv(5), uv(6), uv(math.MaxUint64), uv(9))},
		{"view Last 2^40", cat(header(flagMembership), timing, uv(1), uv(5), uv(6), uv(6), uv(1<<40+2))},
		{"view Last huge", cat(header(flagMembership), timing, uv(1), uv(5), uv(6), uv(6), uv(math.MaxUint64))},
		{"second view Last out of range", cat(header(flagMembership), timing, uv(0b11), view, uv(5), uv(6), uv(6), uv(1<<41))},
		{"membership then trailing byte", cat(header(flagMembership), timing, uv(1), view, []byte{0})},

		// Leave.
		{"leave without its frame", cat(header(flagLeave), timing)},
		{"leave frame cut short", cat(header(flagLeave), timing, []byte{0x80})},
		{"leave frame 2^40", cat(header(flagLeave), timing, uv(1<<40+1))},
		{"leave then trailing byte", cat(header(flagLeave), timing, uv(3), []byte{0})},

		// Relay.
		{"relay without its member", cat(header(flagRelay), timing)},
		{"relay without First", cat(header(flagRelay), timing, []byte{3})},
		{"relay First beyond 32 bits", cat(header(flagRelay), timing, []byte{3}, uv(1<<32), uv(10), []byte{0})},
		{"relay without its seal", cat(header(flagRelay), timing, []byte{3}, uv(9))},
		{"relay seal 2^40", cat(header(flagRelay), timing, []byte{3}, uv(9), uv(1<<40+1), []byte{0})},
		{"relay without its count", cat(header(flagRelay), timing, relayHead)},
		{"relay count cut short", cat(header(flagRelay), timing, relayHead, []byte{0x81})},
		// A seal-only relay's count is the single byte 0x00: the decoder
		// reads a count that starts with any other byte as a command list,
		// and a command list is never empty.
		{"relay count 0, non-minimal", cat(header(flagRelay), timing, relayHead, []byte{0x80, 0x00})},
		{"relay count larger than the bytes allow", cat(header(flagRelay), timing, relayHead, uv(3), uv(2), uv(0), uv(0), uv(0))},
		{"relay count 2^15+1", cat(header(flagRelay), timing, relayHead, uv(1<<15+1), make([]byte, 1100))},
		{"relay count huge", cat(header(flagRelay), timing, relayHead, uv(math.MaxUint64), []byte{0, 0})},
		{"fewer relayed commands than counted", cat(header(flagRelay), timing, relayHead, uv(2), []byte{2, 0, 2, 1})},
		{"relayed payload longer than the datagram", cat(header(flagRelay), timing, relayHead, uv(1), uv(2), uv(9), []byte{1, 2, 3})},
		{"relayed command frame negative", cat(header(flagRelay), timing, []byte{3}, uv(9), uv(0), uv(1), uv(zigzag(-1)), uv(0))},
		{"relayed command frame 2^40", cat(header(flagRelay), timing, []byte{3}, uv(9), uv(1<<40), uv(1), uv(zigzag(1)), uv(0))},
		{"relayed command frame delta above 2^40", cat(header(flagRelay), timing, relayHead, uv(2), uv(2), uv(0), uv(1<<40+1), uv(0))},
		{"seal-only relay then trailing byte", cat(header(flagRelay), timing, relayHead, []byte{0, 0})},

		// Detail.
		{"detail without its start", cat(header(flagDetail), timing)},
		{"detail start -1", cat(header(flagDetail), timing, uv(0), uv(1), hashes(2), uv(0))},
		{"detail start 2^40", cat(header(flagDetail), timing, uv(1<<40+1), uv(1), hashes(2), uv(0))},
		{"detail without its count", cat(header(flagDetail), timing, detailHead)},
		{"detail count 0", cat(header(flagDetail), timing, detailHead, uv(0), uv(0))},
		{"detail count MaxDetailFrames+1", cat(header(flagDetail), timing, detailHead, uv(MaxDetailFrames+1), hashes(2*MaxDetailFrames+2), uv(0))},
		{"detail count huge", cat(header(flagDetail), timing, detailHead, uv(math.MaxUint64), hashes(2))},
		{"detail frames cut short", cat(header(flagDetail), timing, detailHead, uv(2), hashes(3))},
		{"detail frame hash cut short", cat(header(flagDetail), timing, detailHead, uv(1), make([]byte, 15))},
		{"detail without its section count", cat(header(flagDetail), timing, detailHead, uv(1), hashes(2))},
		{"detail sections MaxSections+1", cat(header(flagDetail), timing, detailHead, uv(1), hashes(2), uv(MaxSections+1), hashes(MaxSections+1))},
		{"detail sections huge", cat(header(flagDetail), timing, detailHead, uv(1), hashes(2), uv(math.MaxUint64))},
		{"detail sections cut short", cat(header(flagDetail), timing, detailHead, uv(1), hashes(2), uv(2), hashes(1))},
		{"detail then trailing byte", cat(header(flagDetail), timing, detailHead, uv(1), hashes(2), uv(0), []byte{0})},

		// Blocks in a datagram with the others.
		{"every block, detail missing", cat(header(flagMembership|flagLeave|flagRelay|flagDetail), timing, uv(1), view, uv(20), relayHead, []byte{0})},
		{"every block, relay cut", cat(header(flagMembership|flagLeave|flagRelay|flagDetail), timing, uv(1), view, uv(20), relayHead)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := blockStorage()
			err := Parse(tt.b, &p)
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", p)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			t.Log(err)
			checkBlockStorage(t, &p)
		})
	}
}

// blockStorage returns a Packet whose slices have room for four elements.
func blockStorage() Packet {
	var p Packet
	p.Commands = make([]Command, 0, 4)
	p.Membership.Views = make([]MemberView, 0, 4)
	p.Relay.Commands = make([]Command, 0, 4)
	p.Detail.Frames = make([]FrameHashes, 0, 4)
	p.Detail.Sections = make([]uint64, 0, 4)
	return p
}

// checkBlockStorage checks that p still has the storage of blockStorage.
func checkBlockStorage(t *testing.T, p *Packet) {
	t.Helper()
	if cap(p.Commands) < 4 || cap(p.Membership.Views) < 4 || cap(p.Relay.Commands) < 4 ||
		cap(p.Detail.Frames) < 4 || cap(p.Detail.Sections) < 4 {
		t.Errorf("Parse dropped storage: caps commands %d, views %d, relayed %d, detail frames %d, sections %d",
			cap(p.Commands), cap(p.Membership.Views), cap(p.Relay.Commands), cap(p.Detail.Frames), cap(p.Detail.Sections))
	}
}

func TestAppendBlockErrors(t *testing.T) {
	views := func(n int) []MemberView { return make([]MemberView, n) }
	frames := func(n int) []FrameHashes { return make([]FrameHashes, n) }
	tests := []struct {
		name string
		p    Packet
	}{
		{"one view for two suspects", Packet{HasMembership: true, Membership: Membership{Suspected: 0b11, Views: views(1)}}},
		{"two views for one suspect", Packet{HasMembership: true, Membership: Membership{Suspected: 1 << 63, Views: views(2)}}},
		{"a view for nobody", Packet{HasMembership: true, Membership: Membership{Views: views(1)}}},
		{"no view for a suspect", Packet{HasMembership: true, Membership: Membership{Suspected: 1}}},
		{"view Held below -1", Packet{HasMembership: true, Membership: Membership{Suspected: 1, Views: []MemberView{{Held: -2}}}}},
		{"view Held 2^40", Packet{HasMembership: true, Membership: Membership{Suspected: 1, Views: []MemberView{{Held: 1 << 40}}}}},
		{"view Seal below -1", Packet{HasMembership: true, Membership: Membership{Suspected: 1, Views: []MemberView{{Seal: -2}}}}},
		{"view Seal 2^40", Packet{HasMembership: true, Membership: Membership{Suspected: 1, Views: []MemberView{{Seal: 1 << 40}}}}},
		{"view Last below Unknown", Packet{HasMembership: true, Membership: Membership{Suspected: 1, Views: []MemberView{{Last: Unknown - 1}}}}},
		{"view Last 2^40", Packet{HasMembership: true, Membership: Membership{Suspected: 1, Views: []MemberView{{Last: 1 << 40}}}}},
		{"second view out of range", Packet{HasMembership: true, Membership: Membership{Suspected: 0b11, Views: []MemberView{{}, {Last: math.MinInt64}}}}},
		{"leave frame below -1", Packet{HasLeave: true, LeaveFrame: -2}},
		{"leave frame 2^40", Packet{HasLeave: true, LeaveFrame: 1 << 40}},
		{"relay seal below -1", Packet{HasRelay: true, Relay: Relay{Seal: -2}}},
		{"relay seal 2^40", Packet{HasRelay: true, Relay: Relay{Seal: 1 << 40}}},
		{"relayed command frame negative", Packet{HasRelay: true, Relay: Relay{Seal: -1, Commands: []Command{{Frame: -1}}}}},
		{"relayed command frame 2^40", Packet{HasRelay: true, Relay: Relay{Commands: []Command{{Frame: 1 << 40}}}}},
		{"relayed command frames decrease", Packet{HasRelay: true, Relay: Relay{Commands: []Command{{Frame: 5}, {Frame: 5}, {Frame: 4}}}}},
		{"detail without frames", Packet{HasDetail: true, Detail: Detail{Start: 3}}},
		{"detail of MaxDetailFrames+1 frames", Packet{HasDetail: true, Detail: Detail{Start: 3, Frames: frames(MaxDetailFrames + 1)}}},
		{"detail of MaxSections+1 sections", Packet{HasDetail: true, Detail: Detail{Start: 3, Frames: frames(1), Sections: make([]uint64, MaxSections+1)}}},
		{"detail start -1", Packet{HasDetail: true, Detail: Detail{Start: -1, Frames: frames(1)}}},
		{"detail start 2^40", Packet{HasDetail: true, Detail: Detail{Start: 1 << 40, Frames: frames(1)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.p.Append([]byte("keep"))
			if err == nil {
				t.Fatalf("Append succeeded: % x", b)
			}
			if !bytes.Equal(b, []byte("keep")) {
				t.Errorf("Append returned % x on error, want the input unchanged", b)
			}
		})
	}
}

// TestAppendBlockLimits checks the values checkOptional accepts at the edges
// of its ranges, and that a block's fields are not checked while its flag is
// off.
func TestAppendBlockLimits(t *testing.T) {
	tests := []struct {
		name string
		p    Packet
	}{
		{"view Last Unknown and -1", Packet{HasMembership: true, Membership: Membership{Suspected: 0b11, Views: []MemberView{{Last: Unknown}, {Last: -1}}}}},
		{"64 views", Packet{HasMembership: true, Membership: Membership{Suspected: math.MaxUint64, Views: make([]MemberView, 64)}}},
		{"relay frames equal, first below the seal", Packet{HasRelay: true, Relay: Relay{Seal: 9, Commands: []Command{{Frame: 0}, {Frame: 0}}}}},
		{"detail of MaxDetailFrames frames and MaxSections sections", Packet{HasDetail: true, Detail: Detail{
			Start: 1<<40 - 1, Frames: make([]FrameHashes, MaxDetailFrames), Sections: make([]uint64, MaxSections),
		}}},
		{"unused blocks out of range", Packet{
			Membership: Membership{Suspected: 1, Views: []MemberView{{Held: -7}, {Last: -9}}},
			LeaveFrame: -5,
			Relay:      Relay{Seal: -9, Commands: []Command{{Frame: 3}, {Frame: 1}}},
			Detail:     Detail{Start: -4, Sections: make([]uint64, MaxSections+1)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustAppend(t, &tt.p)
			if len(b) > MaxDatagramSize {
				t.Fatalf("%d bytes", len(b))
			}
			var got Packet
			if err := Parse(b, &got); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := tt.p
			if !want.HasMembership {
				want.Membership = Membership{}
			}
			if !want.HasLeave {
				want.LeaveFrame = 0
			}
			if !want.HasRelay {
				want.Relay = Relay{}
			}
			if !want.HasDetail {
				want.Detail = Detail{}
			}
			if !equalPackets(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestBlockFlags(t *testing.T) {
	tests := []struct {
		name string
		p    Packet
		want byte
	}{
		{"membership", Packet{HasMembership: true}, flagMembership},
		{"leave", Packet{HasLeave: true}, flagLeave},
		{"relay", Packet{HasRelay: true}, flagRelay},
		{"detail", Packet{HasDetail: true, Detail: Detail{Frames: make([]FrameHashes, 1)}}, flagDetail},
		{"every bit", func() Packet {
			p := Packet{HasEcho: true, Commands: []Command{{Frame: 1}}, HasHash: true, HasMembership: true, HasLeave: true, HasRelay: true}
			p.HasDetail, p.Detail.Frames = true, make([]FrameHashes, 1)
			return p
		}(), 0x7f},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustAppend(t, &tt.p)
			if b[6] != tt.want {
				t.Errorf("flags byte %#02x, want %#02x", b[6], tt.want)
			}
		})
	}
	if flagsKnown != 0xff {
		t.Errorf("known flags %#02x, want 0xff", flagsKnown)
	}
}

// TestBlockLayout checks the byte layout of every optional block against a
// hand-written encoding.
func TestBlockLayout(t *testing.T) {
	p := Packet{
		Seal: -1, AckSeal: -1,
		HasMembership: true, Membership: Membership{
			Suspected: 1<<1 | 1<<9,
			Views:     []MemberView{{Held: 3, Seal: 200, Next: 70000, Last: Unknown}, {Held: -1, Seal: -1, Next: 0, Last: -1}},
		},
		HasLeave: true, LeaveFrame: 127,
		HasRelay: true, Relay: Relay{Member: 9, First: 129, Seal: 4, Commands: []Command{{Frame: 2, Payload: []byte{0xaa}}, {Frame: 6}}},
		HasDetail: true, Detail: Detail{
			Start:    1,
			Frames:   []FrameHashes{{State: 0x0102030405060708, Input: 0x1112131415161718}},
			Sections: []uint64{0x2122232425262728},
		},
	}
	b := mustAppend(t, &p)
	want := cat(
		[]byte{0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x78, 0x00, 0x00}, // header, flags 0x78, next 0, ack 0
		[]byte{0x00, 0x00, 0x00, 0x00, 0x00, 0x00},                   // sent (2 bytes), clock, seal -1, ack seal -1, lag
		[]byte{0x82, 0x04}, // Suspected 0x202
		[]byte{0x04, 0xc9, 0x01, 0xf0, 0xa2, 0x04, 0x00},             // Held 3, Seal 200, Next 70000, Last Unknown
		[]byte{0x00, 0x00, 0x00, 0x01},                               // Held -1, Seal -1, Next 0, Last -1
		[]byte{0x80, 0x01},                                           // LeaveFrame 127
		[]byte{0x09, 0x81, 0x01, 0x05},                               // relay: member 9, First 129, Seal 4
		[]byte{0x02, 0x03, 0x01, 0xaa},                               // count 2; frame 4+unzigzag(3) = 2, length 1, payload
		[]byte{0x04, 0x00},                                           // frame 2+4 = 6, length 0
		[]byte{0x02, 0x01},                                           // detail: Start 1, one frame
		[]byte{0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01},       // State
		[]byte{0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11},       // Input
		[]byte{0x01, 0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21}, // one section
	)
	if !bytes.Equal(b, want) {
		t.Fatalf("got  % x\nwant % x", b, want)
	}
	// With reasons (flag bit 7), each view ends with its reason byte.
	p = Packet{Seal: -1, AckSeal: -1, HasMembership: true, Membership: Membership{
		Suspected: 1<<1 | 1<<9,
		Views:     []MemberView{{Held: 3, Seal: 200, Next: 70000, Last: Unknown, Reason: 2}, {Held: -1, Seal: -1, Next: 0, Last: -1}},
	}}
	b = mustAppend(t, &p)
	want = cat(
		[]byte{0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x88, 0x00, 0x00}, // header, flags 0x88, next 0, ack 0
		[]byte{0x00, 0x00, 0x00, 0x00, 0x00, 0x00},                   // sent (2 bytes), clock, seal -1, ack seal -1, lag
		[]byte{0x82, 0x04}, // Suspected 0x202
		[]byte{0x04, 0xc9, 0x01, 0xf0, 0xa2, 0x04, 0x00, 0x02}, // Held 3, Seal 200, Next 70000, Last Unknown, reason 2
		[]byte{0x00, 0x00, 0x00, 0x01, 0x00},                   // Held -1, Seal -1, Next 0, Last -1, reason 0
	)
	if !bytes.Equal(b, want) {
		t.Fatalf("with reasons: got  % x\nwant % x", b, want)
	}
	var q Packet
	if err := Parse(b, &q); err != nil || q.Membership.Views[0].Reason != 2 || q.Membership.Views[1].Reason != 0 {
		t.Fatalf("with reasons: parse %v, views %+v", err, q.Membership.Views)
	}
	// A seal-only relay ends with the single count byte 0x00.
	p = Packet{Seal: -1, AckSeal: -1, HasRelay: true, Relay: Relay{Member: 9, First: 129, Seal: 4}}
	b = mustAppend(t, &p)
	if want := []byte{0x09, 0x81, 0x01, 0x05, 0x00}; !bytes.HasSuffix(b, want) || len(b) != 15+len(want) {
		t.Fatalf("seal-only relay: got % x, want 15 bytes then % x", b, want)
	}
}

// blockPacket is a datagram with every block and several entries in each.
func blockPacket() Packet {
	p := typicalPacket()
	p.HasMembership, p.Membership = true, Membership{Suspected: 1<<0 | 1<<4 | 1<<33, Views: []MemberView{
		{Held: 2400, Seal: 2410, Next: 9000, Last: Unknown},
		{Held: 2399, Seal: 2399, Next: 123456, Last: 2405, Reason: 4},
		{Held: -1, Seal: 2300, Next: 1 << 31, Last: 2300},
	}}
	p.HasLeave, p.LeaveFrame = true, 2470
	p.HasRelay, p.Relay = true, Relay{Member: 4, First: 123450, Seal: 2405, Commands: commands(4, 2399, 2, 7)}
	p.HasDetail, p.Detail = true, Detail{
		Start:    2391,
		Frames:   []FrameHashes{{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}},
		Sections: []uint64{11, 12, 13, 14},
	}
	return p
}

// TestBlocksTruncated cuts datagrams with every block at every byte; no
// proper prefix decodes, and a failed decode keeps the block storage.
func TestBlocksTruncated(t *testing.T) {
	sealOnly := blockPacket()
	sealOnly.Relay.Commands = nil
	for _, tt := range []struct {
		name string
		p    Packet
	}{{"several of each", blockPacket()}, {"seal-only relay", sealOnly}} {
		t.Run(tt.name, func(t *testing.T) {
			b := mustAppend(t, &tt.p)
			p := blockStorage()
			for i := range len(b) {
				err := Parse(bytes.Clone(b[:i]), &p)
				if err == nil {
					t.Fatalf("Parse of the first %d of %d bytes succeeded", i, len(b))
				}
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("Parse of the first %d bytes: %v does not wrap ErrMalformed", i, err)
				}
				checkBlockStorage(t, &p)
			}
			if err := Parse(b, &p); err != nil || !equalPackets(p, tt.p) {
				t.Fatalf("whole datagram: %v\n got %+v\nwant %+v", err, p, tt.p)
			}
		})
	}
}

// TestParseReusesBlocks checks that Parse decodes the blocks into the
// storage p already has and does not allocate once it has enough.
func TestParseReusesBlocks(t *testing.T) {
	src := blockPacket()
	b := mustAppend(t, &src)
	var p Packet
	if err := Parse(b, &p); err != nil { // warm-up: grows the slices
		t.Fatal(err)
	}
	views, relayed := &p.Membership.Views[0], &p.Relay.Commands[0]
	frames, sections := &p.Detail.Frames[0], &p.Detail.Sections[0]
	allocs := testing.AllocsPerRun(100, func() {
		if err := Parse(b, &p); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Parse allocated %.1f times per run, want 0", allocs)
	}
	if &p.Membership.Views[0] != views || &p.Relay.Commands[0] != relayed ||
		&p.Detail.Frames[0] != frames || &p.Detail.Sections[0] != sections {
		t.Errorf("Parse did not decode into the storage it was given")
	}
	if !equalPackets(p, src) {
		t.Fatalf("got %+v\nwant %+v", p, src)
	}

	// Datagrams without the blocks, with a seal-only relay, or cut short
	// keep the storage for the next one.
	sealOnly := src
	sealOnly.Relay.Commands = nil
	valid := [][]byte{mustAppend(t, &sealOnly), mustAppend(t, &Packet{Seal: 3}), b}
	malformed := [][]byte{b[:len(b)-1], b[:12]}
	for _, other := range append(valid[:2:2], malformed...) {
		_ = Parse(other, &p)
		if cap(p.Membership.Views) < len(src.Membership.Views) || cap(p.Relay.Commands) < len(src.Relay.Commands) ||
			cap(p.Detail.Frames) < len(src.Detail.Frames) || cap(p.Detail.Sections) < len(src.Detail.Sections) {
			t.Fatalf("after a %d-byte datagram: storage dropped", len(other))
		}
	}
	allocs = testing.AllocsPerRun(100, func() {
		for _, v := range valid {
			if err := Parse(v, &p); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("Parse of datagrams with and without blocks allocated %.1f times per round, want 0", allocs)
	}
	// After a malformed datagram (whose error allocates), the next Parse
	// does not. Only that Parse is counted: the error's allocations vary
	// under the race detector, which drops sync.Pool items at random.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // as AllocsPerRun does
	for _, bad := range malformed {
		var before, after runtime.MemStats
		var mallocs uint64
		for range 100 {
			_ = Parse(bad, &p)
			runtime.ReadMemStats(&before)
			err := Parse(b, &p)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			mallocs += after.Mallocs - before.Mallocs
		}
		if mallocs != 0 {
			t.Errorf("Parse after a %d-byte malformed datagram allocated %d times in 100 runs, want 0", len(bad), mallocs)
		}
	}
	if &p.Membership.Views[0] != views || &p.Relay.Commands[0] != relayed ||
		&p.Detail.Frames[0] != frames || &p.Detail.Sections[0] != sections {
		t.Errorf("Parse moved the storage after other datagrams")
	}
}

// TestRelayedPayloadsAlias checks that relayed payloads, like the sender's
// own, point into the datagram with their capacity clipped.
func TestRelayedPayloadsAlias(t *testing.T) {
	src := blockPacket()
	b := mustAppend(t, &src)
	orig := bytes.Clone(b)
	var p Packet
	if err := Parse(b, &p); err != nil {
		t.Fatal(err)
	}
	c := p.Relay.Commands[1]
	i := bytes.LastIndex(b, src.Relay.Commands[1].Payload)
	if i < 0 || &c.Payload[0] != &b[i] {
		t.Fatalf("relayed payload does not alias the datagram")
	}
	if cap(c.Payload) != len(c.Payload) {
		t.Errorf("relayed payload capacity %d exceeds its length %d", cap(c.Payload), len(c.Payload))
	}
	_ = append(c.Payload, 0xee)
	if !bytes.Equal(b, orig) {
		t.Fatalf("appending to a relayed payload changed the datagram")
	}
}

// TestParseClearsBlocks checks that a block of one datagram does not leak
// into the next.
func TestParseClearsBlocks(t *testing.T) {
	full := blockPacket()
	var p Packet
	if err := Parse(mustAppend(t, &full), &p); err != nil {
		t.Fatal(err)
	}
	small := Packet{Seal: 3, AckSeal: 2, HasDetail: true, Detail: Detail{Start: 5, Frames: []FrameHashes{{7, 8}}}}
	if err := Parse(mustAppend(t, &small), &p); err != nil {
		t.Fatal(err)
	}
	if !equalPackets(p, small) {
		t.Fatalf("got %+v\nwant %+v", p, small)
	}
	if p.HasMembership || p.HasLeave || p.HasRelay || p.LeaveFrame != 0 || p.Relay.Member != 0 || len(p.Detail.Sections) != 0 {
		t.Fatalf("fields of the previous datagram remain: %+v", p)
	}
}

// TestMemberViewLastCoding checks the +2 coding of MemberView.Last at the
// edges of its range.
func TestMemberViewLastCoding(t *testing.T) {
	for _, last := range []bucket.Frame{Unknown, -1, 0, 125, 126, 1<<40 - 1} {
		p := Packet{HasMembership: true, Membership: Membership{Suspected: 1, Views: []MemberView{{Last: last}}}}
		b := mustAppend(t, &p)
		if want := uv(uint64(last + 2)); !bytes.HasSuffix(b, want) {
			t.Errorf("Last %d: datagram ends % x, want % x", last, b[len(b)-len(want):], want)
		}
		var got Packet
		if err := Parse(b, &got); err != nil || got.Membership.Views[0].Last != last {
			t.Errorf("Last %d: decoded %+v, %v", last, got.Membership.Views, err)
		}
	}
}

// docBlocksExamplePacket is the second worked example of docs/protocol.md:
// member 1 of a four-member session sends member 0 a datagram with every
// optional block.
func docBlocksExamplePacket() Packet {
	return Packet{
		Session: 0x1234, From: 1, Number: 0x0230,
		Sent: 14464, Clock: 79500,
		Seal: 162, Next: 48,
		Ack: 40, AckSeal: 161,
		Lag:           95,
		HasMembership: true, Membership: Membership{Suspected: 1 << 3, Views: []MemberView{{Held: 153, Seal: 153, Next: 61, Last: Unknown}}},
		HasLeave: true, LeaveFrame: 170,
		HasRelay: true, Relay: Relay{Member: 3, First: 59, Seal: 153, Commands: []Command{
			{Frame: 152, Payload: []byte("go")},
			{Frame: 153, Payload: []byte{0x2a}},
		}},
		HasDetail: true, Detail: Detail{
			Start:    149,
			Frames:   []FrameHashes{{0x1111111111111111, 0x2222222222222222}, {0x3333333333333333, 0x4444444444444444}},
			Sections: []uint64{0x5555555555555555},
		},
	}
}

// TestProtocolDocBlocksExample checks that docs/protocol.md contains the hex
// dump and size of its second worked example, as the encoder produces them.
func TestProtocolDocBlocksExample(t *testing.T) {
	p := docBlocksExamplePacket()
	b := mustAppend(t, &p)
	var q Packet
	if err := Parse(b, &q); err != nil || !equalPackets(p, q) {
		t.Fatalf("example does not round-trip: %v\n%+v", err, q)
	}
	golden.InDoc(t, filepath.Join("..", "..", "docs", "protocol.md"), golden.HexDump(b), fmt.Sprintf("(%d bytes)", len(b)))
}

// TestProtocolDocInputHash checks the input hash vectors of docs/protocol.md
// §10.7 against FNV-1a 64 over the layout the document specifies (frame 8
// bytes, then per command slot 1, sequence 4, length 4, payload; integers
// little-endian). lockstep.InputHash is that function; it is not imported
// here so that the wire tests depend on nothing above the wire.
func TestProtocolDocInputHash(t *testing.T) {
	type command struct {
		slot    byte
		seq     uint32
		payload []byte
	}
	inputHash := func(frame int64, cmds []command) uint64 {
		h := fnv.New64a()
		b := binary.LittleEndian.AppendUint64(nil, uint64(frame))
		for _, c := range cmds {
			b = append(b, c.slot)
			b = binary.LittleEndian.AppendUint32(b, c.seq)
			b = binary.LittleEndian.AppendUint32(b, uint32(len(c.payload)))
			b = append(b, c.payload...)
		}
		h.Write(b)
		return h.Sum64()
	}
	golden.InDoc(t, filepath.Join("..", "..", "docs", "protocol.md"),
		fmt.Sprintf("`%#016x`", inputHash(0, nil)),
		fmt.Sprintf("`%#016x`", inputHash(26, []command{{0, 7, []byte("jump")}, {2, 14, []byte{0x07, 0xff}}})))
}
