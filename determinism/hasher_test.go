package determinism

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"
)

func TestXXHash64Vectors(t *testing.T) {
	mod251 := make([]byte, 1000)
	for i := range mod251 {
		mod251[i] = byte(i % 251)
	}
	// Expected values from xxh64sum (xxHash 0.8).
	for _, tc := range []struct {
		name string
		in   []byte
		want uint64
	}{
		{"empty", nil, 0xef46db3751d8e999},
		{"a", []byte("a"), 0xd24ec4f1a98c6e5b},
		{"abc", []byte("abc"), 0x44bc2cf5ad770999},
		{"sentence", []byte("Nobody inspects the spammish repetition"), 0xfbcea83c8a378bf1},
		{"xxhash", []byte("xxhash"), 0x32dd38952c4bc720},
		{"100 zero bytes", make([]byte, 100), 0x17bb1103c92c502f},
		{"1000 bytes i mod 251", mod251, 0xf306f04aa88b54d3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertEqual(t, tc.want, XXHash64(tc.in))
		})
	}
}

func TestXXHash64Streaming(t *testing.T) {
	r := newTestRand(40)
	data := make([]byte, 300)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for n := range len(data) + 1 {
		want := XXHash64(data[:n])
		for range 4 {
			var d xxDigest
			d.reset()
			for rest := data[:n]; len(rest) > 0; {
				k := min(len(rest), r.IntN(70))
				d.write(rest[:k])
				rest = rest[k:]
			}
			requireEqual(t, want, d.sum(), "streamed %d bytes", n)
		}
	}
}

// hashOp is one Hasher call and the bytes it adds to the stream.
type hashOp struct {
	section bool   // a Section call named name
	name    string //
	call    func(h *Hasher)
	enc     []byte
}

func sectionOp(name string) hashOp { return hashOp{section: true, name: name} }

func writeOp(call func(h *Hasher), enc ...byte) hashOp { return hashOp{call: call, enc: enc} }

func uvarintString(s string) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(s))), s...)
}

// modelHash computes Sum64 and Sections as the Hasher doc specifies them.
func modelHash(ops []hashOp) (uint64, []SectionHash) {
	var whole, cur []byte
	var sections []SectionHash
	name, named := "", false
	for _, op := range ops {
		if op.section {
			if named || len(cur) > 0 {
				sections = append(sections, SectionHash{name, XXHash64(cur)})
			}
			whole = append(whole, uvarintString(op.name)...)
			cur, name, named = nil, op.name, true
			continue
		}
		whole = append(whole, op.enc...)
		cur = append(cur, op.enc...)
	}
	if named || len(cur) > 0 {
		sections = append(sections, SectionHash{name, XXHash64(cur)})
	}
	return XXHash64(whole), sections
}

func TestHasherEncoding(t *testing.T) {
	long := strings.Repeat("0123456789abcdef", 100) // longer than the buffer
	le64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	for _, tc := range []struct {
		name string
		op   hashOp
	}{
		{"Uint64", writeOp(func(h *Hasher) { h.WriteUint64(0x0102030405060708) }, 8, 7, 6, 5, 4, 3, 2, 1)},
		{"Int64", writeOp(func(h *Hasher) { h.WriteInt64(-2) }, le64(^uint64(1))...)},
		{"Int", writeOp(func(h *Hasher) { h.WriteInt(-1) }, le64(^uint64(0))...)},
		{"Uint32", writeOp(func(h *Hasher) { h.WriteUint32(0xdeadbeef) }, 0xef, 0xbe, 0xad, 0xde)},
		{"true", writeOp(func(h *Hasher) { h.WriteBool(true) }, 1)},
		{"false", writeOp(func(h *Hasher) { h.WriteBool(false) }, 0)},
		{"Fixed", writeOp(func(h *Hasher) { h.WriteFixed(-Half) }, le64(uint64(1<<64-1<<31))...)},
		{"Vec2", writeOp(func(h *Hasher) { h.WriteVec2(V2(One, -1)) }, append(le64(1<<32), le64(^uint64(0))...)...)},
		{"String", writeOp(func(h *Hasher) { h.WriteString("hi") }, 2, 'h', 'i')},
		{"empty String", writeOp(func(h *Hasher) { h.WriteString("") }, 0)},
		{"Bytes", writeOp(func(h *Hasher) { h.WriteBytes([]byte{9, 8, 7}) }, 3, 9, 8, 7)},
		{"nil Bytes", writeOp(func(h *Hasher) { h.WriteBytes(nil) }, 0)},
		{"long String", writeOp(func(h *Hasher) { h.WriteString(long) }, uvarintString(long)...)},
		{"long Bytes", writeOp(func(h *Hasher) { h.WriteBytes([]byte(long)) }, uvarintString(long)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHasher()
			tc.op.call(h)
			assertEqual(t, XXHash64(tc.op.enc), h.Sum64())
		})
	}
}

func TestHasherSections(t *testing.T) {
	u64 := func(v uint64) hashOp {
		return writeOp(func(h *Hasher) { h.WriteUint64(v) }, binary.LittleEndian.AppendUint64(nil, v)...)
	}
	str := func(s string) hashOp {
		return writeOp(func(h *Hasher) { h.WriteString(s) }, uvarintString(s)...)
	}
	longName := strings.Repeat("n", 1500)
	var many []hashOp
	for i := range 200 { // crosses the buffer many times
		many = append(many, u64(uint64(i)), str(strings.Repeat("x", i)))
	}
	for _, tc := range []struct {
		name string
		ops  []hashOp
		want []SectionHash // names and count; hashes come from the model
	}{
		{"nothing", nil, nil},
		{"unnamed only", []hashOp{u64(1), u64(2)}, []SectionHash{{Name: ""}}},
		{"named", []hashOp{sectionOp("units"), u64(1), sectionOp("map"), str("x")},
			[]SectionHash{{Name: "units"}, {Name: "map"}}},
		{"unnamed then named", []hashOp{u64(7), sectionOp("a"), u64(8)},
			[]SectionHash{{Name: ""}, {Name: "a"}}},
		{"empty sections are reported", []hashOp{sectionOp("a"), sectionOp("b"), u64(1), sectionOp("c")},
			[]SectionHash{{Name: "a"}, {Name: "b"}, {Name: "c"}}},
		{"empty unnamed section is not", []hashOp{sectionOp(""), u64(3)},
			[]SectionHash{{Name: ""}}},
		{"duplicate names", []hashOp{sectionOp("a"), u64(1), sectionOp("a"), u64(2)},
			[]SectionHash{{Name: "a"}, {Name: "a"}}},
		{"long name", []hashOp{u64(1), sectionOp(longName), u64(2)},
			[]SectionHash{{Name: ""}, {Name: longName}}},
		{"many writes", append(append([]hashOp{sectionOp("first")}, many...), append([]hashOp{sectionOp("second")}, many...)...),
			[]SectionHash{{Name: "first"}, {Name: "second"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHasher()
			for _, op := range tc.ops {
				if op.section {
					h.Section(op.name)
				} else {
					op.call(h)
				}
			}
			wantSum, wantSections := modelHash(tc.ops)
			assertEqual(t, wantSum, h.Sum64(), "Sum64")
			got := h.Sections()
			requireEqual(t, len(tc.want), len(got), "number of sections")
			requireEqual(t, len(wantSections), len(got), "number of sections (model)")
			for i := range got {
				assertEqual(t, tc.want[i].Name, got[i].Name, "section %d name", i)
				assertEqual(t, wantSections[i], got[i], "section %d", i)
			}
		})
	}
}

func TestHasherSectionsDiffer(t *testing.T) {
	// A change in one section changes that section's hash and Sum64 only.
	state := func(hp int64) *Hasher {
		h := NewHasher()
		h.Section("units")
		h.WriteInt64(hp)
		h.Section("map")
		h.WriteString("grass")
		return h
	}
	a, b := state(100), state(99)
	sa, sb := a.Sections(), b.Sections()
	requireEqual(t, 2, len(sa))
	assertEqual(t, true, sa[0] != sb[0], "units differ")
	assertEqual(t, sa[1], sb[1], "map equal")
	assertEqual(t, true, a.Sum64() != b.Sum64(), "Sum64 differs")

	// Section names are part of Sum64 but not of section hashes.
	c, d := NewHasher(), NewHasher()
	c.Section("x")
	c.WriteBool(true)
	d.Section("y")
	d.WriteBool(true)
	assertEqual(t, c.Sections()[0].Hash, d.Sections()[0].Hash, "section hash excludes the name")
	assertEqual(t, true, c.Sum64() != d.Sum64(), "Sum64 includes the name")
}

func TestHasherMidStreamAndReset(t *testing.T) {
	h := NewHasher()
	h.Section("a")
	h.WriteUint64(1)
	first := h.Sum64()
	firstSections := h.Sections()
	h.WriteUint64(2) // the stream continues after Sum64 and Sections
	h.Section("b")
	h.WriteUint32(3)

	g := NewHasher()
	g.Section("a")
	g.WriteUint64(1)
	assertEqual(t, first, g.Sum64())
	g.WriteUint64(2)
	g.Section("b")
	g.WriteUint32(3)
	assertEqual(t, g.Sum64(), h.Sum64())
	assertEqual(t, true, slices.Equal(g.Sections(), h.Sections()))
	assertEqual(t, 1, len(firstSections))

	h.Reset()
	assertEqual(t, XXHash64(nil), h.Sum64(), "Sum64 after Reset")
	assertEqual(t, 0, len(h.Sections()), "Sections after Reset")
	h.Section("a")
	h.WriteUint64(1)
	assertEqual(t, first, h.Sum64(), "same stream after Reset")
	assertEqual(t, true, slices.Equal(firstSections, h.Sections()))

	buf := make([]SectionHash, 0, 8)
	out := h.AppendSections(buf)
	assertEqual(t, true, slices.Equal(firstSections, out))
	assertEqual(t, &buf[:1][0], &out[0], "AppendSections reuses capacity")
}

func TestHasherZeroValuePanics(t *testing.T) {
	var h Hasher
	assertPanics(t, "determinism: Hasher used without NewHasher", func() { h.Sum64() })
	assertPanics(t, "determinism: Hasher used without NewHasher", func() { h.Section("a") })
}

func TestHasherAllocations(t *testing.T) {
	h := NewHasher()
	blob := make([]byte, 100)
	sections := make([]SectionHash, 0, 8)
	frame := func() {
		h.Reset()
		h.Section("units")
		for i := range 100 {
			h.WriteInt(i)
			h.WriteVec2(V2(FromInt(int64(i)), Half))
			h.WriteFixed(One)
			h.WriteBool(i%2 == 0)
			h.WriteUint32(uint32(i))
		}
		h.Section("map")
		h.WriteBytes(blob)
		h.WriteString("grass")
		_ = h.Sum64()
		sections = h.AppendSections(sections[:0])
	}
	frame() // warm up: the section list grows once
	if n := testing.AllocsPerRun(100, frame); n != 0 {
		t.Errorf("a reused Hasher allocates %v times per frame, want 0", n)
	}
}
