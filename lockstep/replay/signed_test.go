package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
	"github.com/phalanx-net/phalanx/lockstep/wire"
	"github.com/phalanx-net/phalanx/netsim"
	"github.com/phalanx-net/phalanx/rng"
)

const signedSeed = 9

// signedReplay runs four signing members in virtual time and returns member
// 0's replay, with the statements its core held.
func signedReplay(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{
		Session: []byte{signedSeed, 0}, FrameLength: 50 * time.Millisecond,
		SimName: "null", SimVersion: "1", Seed: rng.SeedFromUint64(signedSeed),
		Members: []string{"member-0", "member-1", "member-2", "member-3"},
	})
	if err != nil {
		t.Fatal(err)
	}
	const frames = 200
	var last uint64
	res, err := locksteptest.Run(locksteptest.Config{
		Members: 4, Frames: frames, Seed: signedSeed, Profile: lanProfile(t),
		NewSim: func(bucket.Slot) lockstep.Simulation { return &locksteptest.NullSim{} },
		Commands: func(s bucket.Slot, f bucket.Frame) [][]byte {
			if (int(f)+int(s)*3)%7 == 0 {
				return [][]byte{{byte(s), byte(f), 1, 2, 3}}
			}
			return nil
		},
		OnStep: func(slot bucket.Slot, b lockstep.Bucket, sim lockstep.Simulation) {
			if slot == 0 && b.Frame < frames {
				if err := w.Record(b, sim); err != nil {
					t.Fatal(err)
				}
				last = sim.Hash()
			}
		},
		OnStatement: func(slot, m bucket.Slot, st wire.Statement) {
			if slot == 0 {
				if err := w.Statement(Statement{Member: m, Tag: signedSeed, Seal: st.Seal, Count: st.Count, Signature: st.Signature}); err != nil {
					t.Fatal(err)
				}
			}
		},
	})
	if err != nil || !res.Identical {
		t.Fatalf("run: %v, identical %v", err, res != nil && res.Identical)
	}
	if err := w.Close(frames-1, last, EndCompleted); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func simulatedVerifier(members int, seed uint64) lockstep.Verifier {
	s := rng.SeedFromUint64(seed)
	_, v := lockstep.Ed25519Keys(members, s[:])
	return v
}

func TestCheckSignatures(t *testing.T) {
	data := signedReplay(t)
	sig, err := CheckSignatures(bytes.NewReader(data), simulatedVerifier(4, signedSeed))
	if err != nil {
		t.Fatal(err)
	}
	if sig.Statements == 0 || sig.Checked < sig.Statements/2 {
		t.Fatalf("%+v: too few statements checked", sig)
	}
	for m, n := range sig.Covered {
		if n == 0 {
			t.Errorf("no command of member %d is vouched for: %+v", m, sig)
		}
	}
	// Another member's keys: every statement fails.
	if _, err := CheckSignatures(bytes.NewReader(data), simulatedVerifier(4, signedSeed+1)); !errors.Is(err, ErrSignature) {
		t.Fatalf("with the wrong keys: %v, want ErrSignature", err)
	}
	// The replay still re-runs.
	if _, err := Verify(bytes.NewReader(data), func(Header) (lockstep.Simulation, error) { return &locksteptest.NullSim{}, nil }, nil); err != nil {
		t.Fatalf("Verify of a signed replay: %v", err)
	}
}

// TestAlteredCommandFailsItsSignature rewrites a signed replay with one
// byte of one command of member 2 changed (checksums recomputed, as a
// forger would): the member's statement covering it fails, and the error
// names the member and a frame range holding the altered command.
func TestAlteredCommandFailsItsSignature(t *testing.T) {
	data := signedReplay(t)
	var altered bucket.Frame = -1
	forged := rewrite(t, data, func(rec *Record) {
		if rec.Kind != KindFrame || altered >= 0 || rec.Frame < 100 {
			return
		}
		for i, c := range rec.Commands {
			if c.Slot == 2 {
				p := slices.Clone(c.Payload)
				p[len(p)-1] ^= 0x40
				rec.Commands[i].Payload = p
				altered = rec.Frame
				return
			}
		}
	})
	if altered < 0 {
		t.Fatal("no command of member 2 after frame 100")
	}
	_, err := CheckSignatures(bytes.NewReader(forged), simulatedVerifier(4, signedSeed))
	if !errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), "member 2's statement") {
		t.Fatalf("CheckSignatures of a replay with the command of member 2 on frame %d altered: %v, want ErrSignature naming member 2", altered, err)
	}
	var from, to bucket.Frame
	if _, err := fmtSscanRange(err.Error(), &from, &to); err != nil || altered < from || altered > to {
		t.Fatalf("%v: the range does not hold the altered frame %d", err, altered)
	}
	t.Log(err)
}

// TestUnsignedReplay: a replay without statements is unsigned, not forged.
func TestUnsignedReplay(t *testing.T) {
	data, _ := session{members: 2, frames: 30, seed: 1, close: true}.record(t)
	sig, err := CheckSignatures(bytes.NewReader(data), simulatedVerifier(2, 1))
	if err != nil || sig.Statements != 0 {
		t.Fatalf("%+v, %v; want no statements and no error", sig, err)
	}
}

// rewrite re-encodes replay data record by record, letting edit change each.
func rewrite(t *testing.T, data []byte, edit func(*Record)) []byte {
	t.Helper()
	rd, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, rd.Header())
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		edit(rec)
		if err := w.Append(*rec); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// fmtSscanRange reads "on frames A to B" or "on frame A" from a
// signature error.
func fmtSscanRange(msg string, from, to *bucket.Frame) (int, error) {
	if _, rest, ok := strings.Cut(msg, "on frames "); ok {
		return fmt.Sscanf(rest, "%d to %d", from, to)
	}
	_, rest, ok := strings.Cut(msg, "on frame ")
	if !ok {
		return 0, errors.New("no frame in the error")
	}
	n, err := fmt.Sscanf(rest, "%d", from)
	*to = *from
	return n, err
}

func lanProfile(t *testing.T) netsim.Profile {
	p, err := netsim.Named("lan")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// statementFile writes a small uncompressed replay with statements: one
// written at 200 frames, the newest of each member at Close.
func statementFile(t testing.TB) []byte {
	w, buf := newTestWriter(t, 2)
	w.SetCompression(false)
	sig := bytes.Repeat([]byte{0xa5}, 64)
	for f := range bucket.Frame(250) {
		var cmds []bucket.Command
		if f%50 == 0 {
			cmds = []bucket.Command{{Slot: 1, Seq: uint32(f / 50), Frame: f, Payload: []byte{byte(f)}}}
		}
		if err := w.Step(f, cmds); err != nil {
			t.Fatal(err)
		}
		if f%50 == 0 {
			w.Statement(Statement{Member: 1, Tag: 7, Seal: f, Count: uint32(f/50 + 1), Signature: sig})
			w.Statement(Statement{Member: 0, Tag: 7, Seal: f, Count: 0, Signature: sig[:10]})
		}
	}
	if err := w.Close(249, 1, EndCompleted); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestStatementRecords: the writer keeps the newest statement of each
// member and writes them every StatementFrames frames and at Close; the
// reader returns them as written. A version-1 file may not hold one.
func TestStatementRecords(t *testing.T) {
	data := statementFile(t)
	_, recs, err := readAll(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		if r.Kind == KindStatement {
			s := r.Statement
			got = append(got, fmt.Sprintf("after %d: member %d tag %d seal %d count %d, %d-byte signature", r.Frame, s.Member, s.Tag, s.Seal, s.Count, len(s.Signature)))
		}
	}
	want := []string{
		"after 199: member 0 tag 7 seal 150 count 0, 10-byte signature",
		"after 199: member 1 tag 7 seal 150 count 4, 64-byte signature",
		"after 249: member 0 tag 7 seal 200 count 0, 10-byte signature",
		"after 249: member 1 tag 7 seal 200 count 5, 64-byte signature",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("statements\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The same bytes declared version 1: the statement record is refused.
	if _, _, err := readAll(setVersion(data, 1)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a statement in a version-1 file: %v, want ErrMalformed", err)
	}
}

// TestStatementWaitsForItsCommands: a statement covering commands not yet
// recorded (a member signs commands stamped a lead ahead) is held until they
// are, and newer ones are not kept meanwhile; at Close the file holds the
// newest statement whose commands it holds, never one it cannot check. An
// admission writes the member's held statement before the change record:
// it is about the old stream.
func TestStatementWaitsForItsCommands(t *testing.T) {
	w, buf := newTestWriter(t, 2)
	w.SetCompression(false)
	sig := bytes.Repeat([]byte{0x5a}, 64)
	step := func(f bucket.Frame, seq uint32) {
		t.Helper()
		var cmds []bucket.Command
		if seq > 0 {
			cmds = []bucket.Command{{Slot: 1, Seq: seq - 1, Frame: f, Payload: []byte{byte(f)}}}
		}
		if err := w.Step(f, cmds); err != nil {
			t.Fatal(err)
		}
	}
	state := func(seal bucket.Frame, count uint32) Statement {
		return Statement{Member: 1, Tag: 7, Seal: seal, Count: count, Signature: sig}
	}
	step(0, 1) // member 1's command 0
	w.Statement(state(2, 1))
	w.Statement(state(4, 2)) // command 1, on frame 3: waits
	w.Statement(state(6, 3)) // an older one waits: not kept
	step(1, 0)
	step(2, 0)
	step(3, 2) // command 1 recorded: the waiting statement is the newest to write
	w.Statement(state(8, 4))
	if err := w.Membership(Change{Kind: ChangeRejoin, Member: 1, Frame: 5, LastFrame: -1}); err != nil {
		t.Fatal(err)
	}
	step(4, 0)
	if err := w.Close(4, 1, EndCompleted); err != nil {
		t.Fatal(err)
	}
	_, recs, err := readAll(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		switch r.Kind {
		case KindStatement:
			got = append(got, fmt.Sprintf("after %d: statement seal %d count %d", r.Frame, r.Statement.Seal, r.Statement.Count))
		case KindChange:
			got = append(got, fmt.Sprintf("after %d: change of member %d at %d", r.Frame, r.Change.Member, r.Change.Frame))
		}
	}
	want := []string{
		"after 3: statement seal 4 count 2",
		"after 5: change of member 1 at 5",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
